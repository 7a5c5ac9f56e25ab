// Shape-general exports (store/ only): the conditions every plan needs (CUDA's limits, int32
// arguments, positive sizes) and the header's guard over the axis ranges and a kernel's conditions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/shape_condition.h"
#include "core/task.h"
#include "store/export_names.h"

namespace kevo::store::exporter {

// What every plan needs, whatever wrote it, as conditions over the axes (and `num_sms`): each
// tensor dim positive; each {"int": expr} argument within int32; grid x in [1, 2^31 - 1], y and z
// in [1, 65535]; block dims positive, within (1024, 1024, 64) and 1024 threads in all; dynamic
// shared memory in [0, 232448] (the device's opt-in maximum is checked again at run time); each
// scratch dim non-negative.
std::vector<ShapeCondition> plan_conditions(const Task& task, const Candidate& c);

// Whether run() must ask the GPU before launching: a condition reads num_sms, or a step asks for
// more than 48 KiB of dynamic shared memory (checked against the device's opt-in maximum).
bool needs_device_checks(const Task& task, const Candidate& c, const LauncherNames& L);

// Whether a condition reads the GPU's SM count (checked in run(), once the count is known).
bool reads_num_sms(const ShapeCondition& cond, const Task& task);

// The guard of a shape-general header: in_axis_ranges(), conditions_hold() (the kernel's: its
// template's constraints and its family's assumptions), plan_fits() (plan_conditions without
// num_sms), supported_shape() (all three, constexpr), plan_fits_device() (those with num_sms and
// the queried shared memory maximum), and kVerifiedWorkloads when `verified` is not empty.
std::string general_guard_code(const Task& task, const Candidate& c, const std::vector<ShapeCondition>& kernel,
                               const std::vector<std::map<std::string, int64_t>>& verified, const LauncherNames& L);

}  // namespace kevo::store::exporter
