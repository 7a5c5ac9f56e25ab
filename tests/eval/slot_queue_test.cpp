// The slot queue as the GPUs rely on it: a slot done with its job takes the next waiting one at
// once, even while another slot is still busy with an older (slower) job, so no GPU waits for the
// slowest job of a batch; every job runs once; busy time is accounted per slot; jobs still waiting
// when the queue goes are dropped (their promises break) while running ones finish.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "eval/slot_queue.h"

namespace kevo::eval {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Ran {
  size_t slot = 0;
  Clock::time_point end;
};

long total(const std::vector<long>& v) {
  long n = 0;
  for (long x : v) n += x;
  return n;
}

// A job that sleeps `ms` and tells on which slot and when it finished.
SlotQueue::Job sleeper(int ms, std::shared_ptr<std::promise<Ran>> done) {
  return [ms, done](size_t slot) {
    std::this_thread::sleep_for(milliseconds(ms));
    done->set_value({slot, Clock::now()});
  };
}

TEST(SlotQueue, AFreeSlotTakesTheNextJobWhileAnotherStillRunsAnOlderOne) {
  SlotQueue q(2);
  // Batch 1: one slow job, one fast; batch 2: three fast jobs pushed behind them.
  std::vector<std::shared_ptr<std::promise<Ran>>> p;
  std::vector<std::future<Ran>> f;
  for (int i = 0; i < 5; ++i) {
    p.push_back(std::make_shared<std::promise<Ran>>());
    f.push_back(p.back()->get_future());
  }
  q.push(sleeper(600, p[0]));
  q.push(sleeper(20, p[1]));
  for (int i = 2; i < 5; ++i) q.push(sleeper(20, p[i]));
  std::vector<Ran> r;
  for (auto& x : f) r.push_back(x.get());
  // Batch 2 ran on the other slot, all of it before the slow job of batch 1 was done.
  for (int i = 2; i < 5; ++i) {
    EXPECT_NE(r[i].slot, r[0].slot) << "job " << i;
    EXPECT_GT(std::chrono::duration<double>(r[0].end - r[i].end).count(), 0.0)
        << "job " << i << " waited for the slow job";
  }
  // Counted as soon as taken: a job whose result is out is never missing from the figures.
  ASSERT_EQ(total(q.jobs_taken()), 5);
  EXPECT_EQ(q.jobs_taken()[r[0].slot], 1);
  EXPECT_EQ(q.jobs_taken()[1 - r[0].slot], 4);
}

TEST(SlotQueue, EveryJobRunsOnceAndBusyTimeIsAccountedPerSlot) {
  const int slots = 3, jobs = 30;
  std::atomic<int> ran[jobs];
  for (auto& a : ran) a = 0;
  std::vector<std::future<Ran>> f;
  {
    SlotQueue q(slots);
    for (int i = 0; i < jobs; ++i) {
      auto p = std::make_shared<std::promise<Ran>>();
      f.push_back(p->get_future());
      q.push([i, p, &ran](size_t slot) {
        ++ran[i];
        std::this_thread::sleep_for(milliseconds(10));
        p->set_value({slot, Clock::now()});
      });
    }
    for (auto& x : f) x.get();
    ASSERT_EQ(total(q.jobs_taken()), jobs);
    double busy = 0;
    for (double b : q.busy_seconds()) {
      EXPECT_GT(b, 0.0) << "a slot took no job";
      busy += b;
    }
    EXPECT_GE(busy, jobs * 0.010);
    EXPECT_LT(busy, jobs * 0.010 + 1.0);
  }
  for (int i = 0; i < jobs; ++i) EXPECT_EQ(ran[i], 1) << "job " << i;
}

TEST(SlotQueue, GoingAwayFinishesRunningJobsAndDropsWaitingOnes) {
  auto running = std::make_shared<std::promise<Ran>>();
  auto waiting = std::make_shared<std::promise<Ran>>();
  std::future<Ran> r = running->get_future(), w = waiting->get_future();
  std::atomic<bool> started{false};
  {
    SlotQueue q(1);
    q.push([&, running](size_t slot) {
      started = true;
      std::this_thread::sleep_for(milliseconds(100));
      running->set_value({slot, Clock::now()});
    });
    q.push(sleeper(10, waiting));
    while (!started) std::this_thread::sleep_for(milliseconds(1));
    waiting.reset();  // the queue holds the only reference now
  }
  EXPECT_EQ(r.get().slot, 0u);
  EXPECT_THROW(w.get(), std::future_error);
}

}  // namespace
}  // namespace kevo::eval
