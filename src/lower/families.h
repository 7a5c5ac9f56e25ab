// Each family's lowering (one file each in src/lower/, the generic family's in src/lower/generic/):
// the spaces it maps a task graph onto, empty where it does not serve the task. registry.cpp lists
// them in the order lower() asks them; the split family calls the gemm, conv and generic ones.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lower/kit.h"

namespace kevo::lower {

// One per family (src/lower/<family>.cpp).
std::vector<std::unique_ptr<DesignSpace>> lower_elementwise(const TaskGraphPtr& tg);
std::vector<std::unique_ptr<DesignSpace>> lower_reduce(const TaskGraphPtr& tg);
std::vector<std::unique_ptr<DesignSpace>> lower_normalize(const TaskGraphPtr& tg);
std::vector<std::unique_ptr<DesignSpace>> lower_scan(const TaskGraphPtr& tg);
std::vector<std::unique_ptr<DesignSpace>> lower_reduce_scalar(const TaskGraphPtr& tg);
std::vector<std::unique_ptr<DesignSpace>> lower_pool(const TaskGraphPtr& tg);
std::vector<std::unique_ptr<DesignSpace>> lower_library(const TaskGraphPtr& tg);
std::vector<std::unique_ptr<DesignSpace>> lower_gemm(const TaskGraphPtr& tg);
// The same, with the epilogue also writing per-(row, N tile) exp statistics of the finished
// tile (templates/gemm/row_stats.cuh) into the plan's buffer `row_stats` ([M, tiles_n, 2] fp32).
std::vector<std::unique_ptr<DesignSpace>> lower_gemm_with_row_stats(const TaskGraphPtr& tg, const std::string& row_stats);
std::vector<std::unique_ptr<DesignSpace>> lower_conv(const TaskGraphPtr& tg);
// A GEMM-led prefix, then a rest that another family lowers, through an fp32 scratch buffer
// (split.cpp): where the gemm family's epilogue cannot take the whole graph; without a GEMM,
// a convolution-led prefix on the conv family the same way.
std::vector<std::unique_ptr<DesignSpace>> lower_split(const TaskGraphPtr& tg);
// The baseline every task has (generic/space.cpp). lower() offers it where no other family
// serves the task or theirs hold fewer than 100 legal genomes, or for every task when
// KEVO_GENERIC=everywhere (generic_everywhere()).
std::vector<std::unique_ptr<DesignSpace>> lower_generic(const TaskGraphPtr& tg);
bool generic_everywhere();
// Why the generic family does not lower a task ("" when it does).
std::string generic_refusal(const TaskGraph& tg);

}  // namespace kevo::lower
