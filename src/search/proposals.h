// Generating candidates: every run's islands ask its policy for children of their elites (or seed
// an empty island), duplicates by source hash are asked again, and each proposal becomes a variant
// record; the new ones become evaluation requests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "policy/source_editor.h"
#include "evaluators/evaluator.h"
#include "search/state.h"
#include "store/records.h"

namespace kevo::search {

// A source editor's sample in a batch: its run and, once added, its variant.
struct BatchSample {
  int run = 0;
  policy::LlmSample sample;
  int64_t variant = -1;
  bool duplicate = false;
  double reward = 0;
};

// One generation's proposals across runs.
struct Batch {
  int generation = -1;
  std::vector<store::VariantRecord> variants;            // every proposal, duplicates included
  std::vector<std::string> sources;                      // per variant (empty for duplicates)
  std::vector<policy::Proposal> proposals;               // per variant
  std::vector<std::optional<policy::Parent>> parents;    // per variant: the first parent's stats
  std::vector<evaluators::EvalRequest> requests;                     // the new ones, in variant order
  std::vector<size_t> variant_of_request;
  std::vector<std::optional<store::MeasurementRecord>> premade;  // per request: a render failure
  std::vector<BatchSample> samples;                      // completions, in the order the editors made them
  // Leading run parts (parts_of) already in the campaign file: committed as each was measured,
  // before the generation was, or found there by a resume.
  size_t parts_committed = 0;
  bool empty() const { return variants.empty(); }
};

// A run's part of a batch: its variants [variants_begin, variants_end) and their requests
// [requests_begin, requests_end). A batch joins its runs' parts in run order, so each is contiguous.
struct BatchPart {
  int run = 0;
  size_t variants_begin = 0, variants_end = 0, requests_begin = 0, requests_end = 0;
};

// The batch's parts in order, one per run that proposed anything.
std::vector<BatchPart> parts_of(const Batch& b);

// Generation `g`'s proposals, drawn from the state the search is in (what generation g-2 and
// earlier taught it: generation g-1 is measured meanwhile), with an RNG forked from (seed, task,
// g, island). Runs whose policy waits on a model propose in parallel; variant ids are numbered as
// if the runs had proposed one after another. Marks runs done whose budget is handed out or whose
// space is exhausted (three generations without a new variant).
Batch propose(SearchState& s, int g);

}  // namespace kevo::search
