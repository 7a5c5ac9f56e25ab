// The llm policy. Per request it decides (by weight, or a bandit) between the language model and
// the template policy; the model's requests are grouped by parent, one chat request per parent
// asking for up to `samples` completions, all of a generation's requests sent at once (the client
// bounds the concurrency). Each completion becomes a free-form child or, when it cannot, a
// recorded failure; the slot then falls back to a template mutation, so a generation never shrinks.
#include "policy/llm_policy.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/candidate.h"
#include "core/error.h"
#include "core/sha256.h"
#include "mutate/child_source.h"
#include "mutate/edit.h"
#include "policy/llm_prompt.h"

namespace kevo::policy {

namespace {

using nlohmann::json;

// Beta(a, b) from two gamma draws.
double beta_draw(double a, double b, std::mt19937_64& rng) {
  double x = std::gamma_distribution<double>(a, 1.0)(rng);
  double y = std::gamma_distribution<double>(b, 1.0)(rng);
  return x + y > 0 ? x / (x + y) : 0.5;
}

class LlmPolicy : public Policy, public SourceEditor {
 public:
  LlmPolicy(const LlmSettings& c, std::shared_ptr<LlmClient> client, std::unique_ptr<Policy> templates)
      : c_(c), client_(std::move(client)), templates_(std::move(templates)) {}

  int inspirations() const override { return c_.inspirations; }

  std::vector<Proposal> propose(const Context& ctx, const std::vector<Request>& requests,
                                std::mt19937_64& rng) override {
    std::vector<std::optional<Proposal>> out(requests.size());
    // 1. Who serves each request. One draw per request whatever the outcome, so the stream of
    // random numbers does not depend on the budget or the server.
    std::vector<size_t> to_model, to_templates;
    for (size_t i = 0; i < requests.size(); ++i) {
      const bool free_form = requests[i].parent.genome.space.empty();
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      bool model = free_form || !templates_;
      if (!model) model = c_.weight >= 0 ? u < c_.weight : thompson(rng);
      (model ? to_model : to_templates).push_back(i);
    }
    // 2. The model's share: one chat request per parent and `samples` completions.
    std::vector<size_t> fallback;
    ask_model(ctx, requests, to_model, out, fallback);
    // 3. The template policy's share, and the slots the model left empty.
    to_templates.insert(to_templates.end(), fallback.begin(), fallback.end());
    std::sort(to_templates.begin(), to_templates.end());
    std::vector<Request> tr;
    std::vector<size_t> tr_of;
    for (size_t i : to_templates) {
      const Request& r = requests[i];
      if (r.parent.genome.space.empty() || !templates_) {
        out[i] = reseed_any(ctx, r, rng);
        continue;
      }
      Request t = r;
      if (t.mate && t.mate->genome.space.empty()) t.mate.reset();  // a free-form mate has no genome to cross
      t.inspirations.clear();
      tr.push_back(std::move(t));
      tr_of.push_back(i);
    }
    if (!tr.empty()) {
      std::vector<Proposal> got = templates_->propose(ctx, tr, rng);
      for (size_t k = 0; k < got.size(); ++k) out[tr_of[k]] = std::move(got[k]);
    }
    std::vector<Proposal> result;
    for (auto& p : out) result.push_back(std::move(*p));
    return result;
  }

  // The bandit counts which arm's children beat their parents; the template policy beside the model
  // learns from its own children and sees every measurement (a learned one with a fitted landscape
  // model refines it; free-form children have no genome it could model).
  void update(const Context& ctx, const Feedback& feedback) override {
    Feedback mine;
    mine.measured = feedback.measured;
    for (const Transition& t : feedback.transitions) {
      const bool model = t.proposal.op == mutate::kEditOp;
      (model ? model_arm_ : template_arm_).add(t.reward > 0);
      if (!model) mine.transitions.push_back(t);
    }
    if (templates_ && !mine.empty()) templates_->update(ctx, mine);
  }

  // The template policy may choose the seeds (a learned one with a fitted landscape model does).
  std::vector<Proposal> seeds(const Context& ctx, int n, std::mt19937_64& rng) override {
    return templates_ ? templates_->seeds(ctx, n, rng) : std::vector<Proposal>{};
  }

  std::string checkpoint() const override { return templates_ ? templates_->checkpoint() : std::string(); }
  void restore(const std::string& bytes) override {
    if (templates_) templates_->restore(bytes);
  }

  std::vector<LlmSample> take_samples() override {
    std::vector<LlmSample> s;
    s.swap(pending_);
    return s;
  }

  void replay_samples(const std::vector<LlmSample>& recorded) override {
    // Grouped by request, in order; keyed by (generation, prompt).
    std::map<int64_t, std::vector<LlmSample>> groups;
    for (const LlmSample& s : recorded) groups[s.request].push_back(s);
    for (auto& [id, g] : groups) replay_[key(g.front().generation, g.front().prompt)].push_back(std::move(g));
  }

 private:
  struct Arm {
    double wins = 0, losses = 0;
    void add(bool win) { (win ? wins : losses) += 1; }
  };

  static std::string key(int generation, const std::string& prompt) {
    return std::to_string(generation) + ":" + sha256_hex(prompt);
  }

  bool thompson(std::mt19937_64& rng) const {
    const double m = beta_draw(1 + model_arm_.wins, 1 + model_arm_.losses, rng);
    const double t = beta_draw(1 + template_arm_.wins, 1 + template_arm_.losses, rng);
    return m >= t;
  }

  Proposal reseed_any(const Context& ctx, const Request& r, std::mt19937_64& rng) const {
    const auto& spaces = *ctx.spaces;
    const mutate::DesignSpace* space = mutate::find_space(spaces, r.parent.genome.space);
    if (!space) space = spaces[std::uniform_int_distribution<size_t>(0, spaces.size() - 1)(rng)].get();
    return reseed_proposal(*space, r.parent, rng);
  }

  void ask_model(const Context& ctx, const std::vector<Request>& requests, const std::vector<size_t>& to_model,
                 std::vector<std::optional<Proposal>>& out, std::vector<size_t>& fallback) {
    // Requests by parent, in order of first appearance; chunks of `samples`.
    std::vector<std::pair<int64_t, std::vector<size_t>>> by_parent;
    for (size_t i : to_model) {
      auto it = std::find_if(by_parent.begin(), by_parent.end(),
                             [&](const auto& e) { return e.first == requests[i].parent.variant; });
      if (it == by_parent.end()) by_parent.push_back({requests[i].parent.variant, {i}});
      else it->second.push_back(i);
    }
    const size_t n = static_cast<size_t>(c_.samples);
    struct Ask {
      std::vector<size_t> slots;
      std::string prompt;
      std::string refused;              // why the prompt is not sent (over its token budget)
      std::vector<LlmSample> recorded;  // when replaying
    };
    std::vector<Ask> asks;
    for (const auto& [parent, slots] : by_parent) {
      const Prompt built = build_prompt(ctx, requests[slots.front()], c_, [this](const std::string& t) { return tokens(t); });
      const std::string prompt = built.messages.dump();
      for (size_t k = 0; k < slots.size(); k += n) {
        Ask a;
        a.slots.assign(slots.begin() + static_cast<long>(k), slots.begin() + static_cast<long>(std::min(slots.size(), k + n)));
        a.prompt = prompt;
        a.refused = built.refused;
        auto rec = replay_.find(key(ctx.generation, prompt));
        if (rec != replay_.end() && !rec->second.empty()) {
          a.recorded = std::move(rec->second.front());
          rec->second.pop_front();
        }
        asks.push_back(std::move(a));
      }
    }
    std::vector<ChatRequest> live;
    std::vector<size_t> live_of;
    for (size_t k = 0; k < asks.size(); ++k) {
      if (!asks[k].recorded.empty() || !asks[k].refused.empty()) continue;
      ChatRequest cr;
      for (const json& m : json::parse(asks[k].prompt)) cr.messages.push_back({m.at("role"), m.at("content")});
      cr.samples = static_cast<int>(asks[k].slots.size());
      live.push_back(std::move(cr));
      live_of.push_back(k);
    }
    std::vector<ChatResult> results = live.empty() ? std::vector<ChatResult>() : client_->chat(live);
    std::vector<std::optional<ChatResult>> result_of(asks.size());
    for (size_t j = 0; j < results.size(); ++j) result_of[live_of[j]] = std::move(results[j]);
    const std::string model = client_->model();

    for (size_t k = 0; k < asks.size(); ++k) {
      Ask& a = asks[k];
      const Request& r = requests[a.slots.front()];
      const int64_t request_id = next_request_++;
      std::vector<LlmSample> samples;
      if (!a.recorded.empty()) {
        samples = a.recorded;  // statuses re-derive below; the recorded text is what matters
      } else if (!a.refused.empty()) {
        LlmSample s;
        s.status = "prompt_too_long";
        s.error = a.refused;
        samples.push_back(s);
      } else {
        const ChatResult& res = *result_of[k];
        if (!res.ok) {
          LlmSample s;
          s.status = "request_failed";
          s.error = res.kind + ": " + res.error;
          samples.push_back(s);
        }
        for (size_t c = 0; res.ok && c < res.completions.size(); ++c) {
          LlmSample s;
          s.response = res.completions[c];
          // usage covers the request: the prompt's tokens go to its first sample
          s.prompt_tokens = c == 0 ? res.prompt_tokens : 0;
          s.completion_tokens = res.completions.size() ? res.completion_tokens / static_cast<int64_t>(res.completions.size()) : 0;
          samples.push_back(s);
        }
      }
      size_t slot = 0;
      for (LlmSample& s : samples) {
        s.request = request_id;
        s.parent = r.parent.variant;
        s.prompt = a.prompt;
        s.generation = ctx.generation;
        if (s.model.empty()) s.model = model;
        if ((s.status == "request_failed" || s.status == "prompt_too_long") && s.response.empty()) {
          pending_.push_back(s);
          continue;
        }
        Proposal p;
        try {
          p.source = mutate::child_source(r.parent.source, s.response);
          parse_candidate(p.source, "child.cu", *ctx.task);  // a plan that cannot launch costs no evaluation
          s.status = "ok";
          s.error.clear();
        } catch (const mutate::EditError& e) {
          s.status = std::string(e.what()).rfind("block ", 0) == 0 ? "edit_failed" : "bad_reply";
          s.error = e.what();
        } catch (const std::exception& e) {
          s.status = "rejected";
          s.error = e.what();
        }
        pending_.push_back(s);
        if (s.status != "ok" || slot >= a.slots.size()) continue;
        p.op = mutate::kEditOp;
        p.child.space.clear();
        p.parents = {r.parent.variant};
        p.action = "edit by " + s.model;
        p.sample = static_cast<int64_t>(pending_.size()) - 1;
        out[a.slots[slot++]] = std::move(p);
      }
      for (; slot < a.slots.size(); ++slot) fallback.push_back(a.slots[slot]);
    }
  }

  // A text's tokens by the server's tokenizer, else estimated; texts repeat across prompts (the
  // rules, the library's parts), so counts are kept.
  int64_t tokens(const std::string& text) {
    const std::string h = sha256_hex(text);
    auto known = token_counts_.find(h);
    if (known != token_counts_.end()) return known->second;
    const std::optional<int64_t> n = client_->count_tokens(text);
    return token_counts_[h] = n ? *n : estimate_tokens(text);
  }

  LlmSettings c_;
  std::map<std::string, int64_t> token_counts_;
  std::shared_ptr<LlmClient> client_;
  std::unique_ptr<Policy> templates_;
  std::vector<LlmSample> pending_;
  std::map<std::string, std::deque<std::vector<LlmSample>>> replay_;
  int64_t next_request_ = 0;
  Arm model_arm_, template_arm_;
};

}  // namespace

std::unique_ptr<Policy> make_llm_policy(const LlmSettings& config, std::shared_ptr<LlmClient> client,
                                        std::unique_ptr<Policy> templates) {
  validate(config);
  if (!client) throw std::runtime_error("llm policy: no client");
  if (!templates && config.weight != 1) throw std::runtime_error("--llm-weight: below 1 needs a template policy (--llm-mix)");
  return std::make_unique<LlmPolicy>(config, std::move(client), std::move(templates));
}

}  // namespace kevo::policy
