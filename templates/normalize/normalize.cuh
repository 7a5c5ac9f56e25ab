// kevo template family "normalize": reduce-then-broadcast. A statistic of each row (the maximum
// and the sum of exponentials, the mean and the variance, a sum) is reduced on chip, then every
// element of the row is rewritten from it: softmax, log_softmax, layer, group and instance norm,
// RMS norm, batch norm. Three kernels:
//   normalize_rows     rows contiguous in memory (or, through ChannelRows, the channels of an
//                      [N, C, S] tensor: batch norm); a row is shared by kThreads threads of a CTA,
//                      or split over the kCluster CTAs of a thread-block cluster (sm_90+), and is
//                      re-read from global memory, or kept in shared memory or registers;
//                      normalize_rows_split_stats/_apply: a row split over kSplit CTAs that
//                      meet through a scratch buffer, in two launches (few, long rows);
//   normalize_columns  the reduced dim has an inner stride ([outer, reduce, inner]): a thread
//                      owns kVec adjacent columns, kBlockY threads share a column's reduction;
//   normalize_channel_columns  batch norm of an [N, C] matrix: Welford statistics per column,
//                      the rows split over kSplit CTAs that meet through a scratch buffer.
// The op itself is a small generated struct `Norm` (the candidate's), which computes the row's
// statistics with the helpers below and turns an element into its output.
#pragma once

#include "channel_columns.cuh"
#include "columns.cuh"
#include "rows.cuh"
