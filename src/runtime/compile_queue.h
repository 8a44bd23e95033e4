// CompileQueue: the background compile threads (DESIGN.md "CompileQueue"). Jobs run in order of
// benefit density (µs saved per µs of compile); a job whose key is already queued or running is
// coalesced onto it (single flight); the pending queue is bounded so a burst of new shapes cannot
// start a compile storm (when full, the lowest-density job is rejected, counted); worker threads
// run at low OS priority (10 nice levels below the process) so request threads preempt them; a
// synchronous mode runs each job inline for tests. Destroying the queue cancels pending jobs and joins the workers after
// their running jobs finish, so destroying a Session while compiles are in flight is clean.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/metrics.h"
#include "support/status.h"

namespace tierjit::runtime {

/// How a job ended.
enum class JobOutcome {
  kPending,    ///< not finished yet
  kDone,       ///< ran; status() says whether the compile succeeded
  kRejected,   ///< dropped by the queue bound (lowest density)
  kCancelled,  ///< dropped at shutdown before it started
};
const char* job_outcome_name(JobOutcome outcome);

/// Shared state of one job; every submit of the same key gets the same ticket while it is in
/// flight. Thread-safe.
class JobTicket {
 public:
  explicit JobTicket(uint64_t key) : key_(key) {}
  uint64_t key() const { return key_; }
  /// Blocks until the job finished, was rejected or cancelled; returns the outcome.
  JobOutcome wait() const;
  JobOutcome outcome() const;
  /// The job's Status (ok unless it ran and failed).
  Status status() const;
  /// Submits that attached to this job (1 + coalesced submits).
  int submitters() const;

 private:
  friend class CompileQueue;
  void finish(JobOutcome outcome, Status status);
  /// Adds a coalesced submitter; calls `cb` at once when the job already finished.
  void attach(std::function<void(JobOutcome, const Status&)> cb);
  uint64_t key_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  JobOutcome outcome_ = JobOutcome::kPending;
  Status status_;
  int submitters_ = 1;
  std::vector<std::function<void(JobOutcome, const Status&)>> on_done_;
};

struct CompileQueueOptions {
  int threads = 0;           ///< 0: max(1, ⌊0.2·hardware threads⌋)
  size_t max_pending = 64;   ///< bound on queued (not yet running) jobs
  bool synchronous = false;  ///< submit runs the job inline on the caller's thread
  int nice = 10;             ///< workers run this many nice levels below the process (at most 19); 0: unchanged
};

enum class SubmitResult {
  kQueued,     ///< new job queued
  kCoalesced,  ///< attached to the same key's queued or running job
  kRanInline,  ///< synchronous mode: done when submit returns
  kRejected,   ///< queue full and this job had the lowest density
  kShutDown,   ///< the queue is shutting down
};
const char* submit_result_name(SubmitResult r);

struct Submission {
  SubmitResult result = SubmitResult::kShutDown;
  std::shared_ptr<JobTicket> ticket;  ///< null only for kShutDown
};

class CompileQueue {
 public:
  /// `metrics` may be null; it must outlive the queue.
  explicit CompileQueue(CompileQueueOptions options = {}, Metrics* metrics = nullptr);
  /// Cancels pending jobs (outcome kCancelled) and joins the workers; running jobs finish first.
  /// Must not run on one of the queue's own workers (a job may call shutdown(), not destroy it).
  ~CompileQueue();
  CompileQueue(const CompileQueue&) = delete;
  CompileQueue& operator=(const CompileQueue&) = delete;

  /// Submits a job `key` (e.g. the CacheKey of the version to build) with priority `density`.
  /// `work` runs on a worker (or inline in synchronous mode); `on_done` (optional) is called once
  /// with the outcome, on the thread that finished, rejected or cancelled the job — for a
  /// coalesced submit it is attached to the job already in flight.
  Submission submit(uint64_t key, double density, std::function<Status()> work,
                    std::function<void(JobOutcome, const Status&)> on_done = nullptr,
                    std::string label = {});
  /// Stops accepting jobs, cancels the pending ones, waits for running ones. Idempotent.
  void shutdown();
  /// Blocks until no job is pending or running (tests, `tierjit precompile`).
  void drain();
  /// drain() for at most `timeout_ms` milliseconds (< 0: no limit); true when the queue is idle.
  bool drain_for(int64_t timeout_ms);

  size_t pending() const;
  size_t running() const;
  int threads() const { return static_cast<int>(workers_.size()); }
  uint64_t rejected() const;
  uint64_t coalesced() const;
  /// Labels of the pending jobs in the order they would run (highest density first).
  std::vector<std::string> pending_labels() const;

  /// The default worker count for `hardware_threads`: max(1, ⌊0.2·P⌋).
  static int default_threads(unsigned hardware_threads);

 private:
  struct Job {
    uint64_t key;
    double density;
    uint64_t seq;  // submission order, breaks density ties (first come first served)
    std::function<Status()> work;
    std::string label;
    std::shared_ptr<JobTicket> ticket;
  };
  struct ByDensity {
    bool operator()(const std::shared_ptr<Job>& a, const std::shared_ptr<Job>& b) const {
      if (a->density != b->density) return a->density > b->density;
      return a->seq < b->seq;
    }
  };
  void worker_loop();
  static void run_job(Job& job);

  CompileQueueOptions options_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::multiset<std::shared_ptr<Job>, ByDensity> pending_;
  std::unordered_map<uint64_t, std::shared_ptr<JobTicket>> in_flight_;  // queued or running
  size_t running_ = 0;
  uint64_t seq_ = 0, rejected_ = 0, coalesced_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tierjit::runtime
