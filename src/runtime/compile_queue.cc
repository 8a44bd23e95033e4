// CompileQueue: workers, density order, single flight, bound, synchronous mode, shutdown.
#include "runtime/compile_queue.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <system_error>

#include <fmt/format.h>

#include "support/cpu_load.h"
#include "support/log.h"
#include "tierjit/error.h"

namespace tierjit::runtime {
namespace {

void release_freed_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace

const char* job_outcome_name(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kPending: return "pending";
    case JobOutcome::kDone: return "done";
    case JobOutcome::kRejected: return "rejected";
    case JobOutcome::kCancelled: return "cancelled";
  }
  return "?";
}

const char* submit_result_name(SubmitResult r) {
  switch (r) {
    case SubmitResult::kQueued: return "queued";
    case SubmitResult::kCoalesced: return "coalesced";
    case SubmitResult::kRanInline: return "ran_inline";
    case SubmitResult::kRejected: return "rejected";
    case SubmitResult::kShutDown: return "shut_down";
  }
  return "?";
}

JobOutcome JobTicket::wait() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return outcome_ != JobOutcome::kPending; });
  return outcome_;
}

JobOutcome JobTicket::outcome() const {
  std::lock_guard lock(mu_);
  return outcome_;
}

Status JobTicket::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

int JobTicket::submitters() const {
  std::lock_guard lock(mu_);
  return submitters_;
}

void JobTicket::finish(JobOutcome outcome, Status status) {
  std::vector<std::function<void(JobOutcome, const Status&)>> callbacks;
  {
    std::lock_guard lock(mu_);
    if (outcome_ != JobOutcome::kPending) return;
    outcome_ = outcome;
    status_ = std::move(status);
    callbacks.swap(on_done_);
  }
  cv_.notify_all();
  for (auto& cb : callbacks) cb(outcome, status_);
}

void JobTicket::attach(std::function<void(JobOutcome, const Status&)> cb) {
  JobOutcome now;
  {
    std::lock_guard lock(mu_);
    ++submitters_;
    now = outcome_;
    if (now == JobOutcome::kPending && cb) on_done_.push_back(std::move(cb));
  }
  if (now != JobOutcome::kPending && cb) cb(now, status_);
}

int CompileQueue::default_threads(unsigned hardware_threads) {
  return std::max(1, static_cast<int>(0.2 * static_cast<double>(hardware_threads)));
}

CompileQueue::CompileQueue(CompileQueueOptions options, Metrics* metrics)
    : options_(options), metrics_(metrics) {
  if (options_.synchronous) return;
  int n = options_.threads > 0 ? options_.threads
                               : default_threads(std::thread::hardware_concurrency());
  for (int i = 0; i < n; ++i) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error& e) {  // the system's thread limit (or memory) reached
      if (workers_.empty()) {
        shutdown();
        throw Error(StatusCode::kResourceExhausted,
                    fmt::format("compile queue: cannot start a compile thread: {}", e.what()));
      }
      TJ_LOG_WARN("compile queue: started {} of {} compile threads ({}); going on with those",
                  workers_.size(), n, e.what());
      break;
    }
  }
}

CompileQueue::~CompileQueue() { shutdown(); }

void CompileQueue::run_job(Job& job) {
  Status status;
  try {
    status = job.work ? job.work() : Status();
  } catch (const std::exception& e) {
    status = internal_error("compile job '{}' threw: {}", job.label, e.what());
  }
  job.ticket->finish(JobOutcome::kDone, std::move(status));
}

Submission CompileQueue::submit(uint64_t key, double density, std::function<Status()> work,
                                std::function<void(JobOutcome, const Status&)> on_done,
                                std::string label) {
  Submission sub;
  std::shared_ptr<Job> evicted;
  {
    std::unique_lock lock(mu_);
    if (stopping_) return sub;
    auto flight = in_flight_.find(key);
    if (flight != in_flight_.end()) {
      sub.result = SubmitResult::kCoalesced;
      sub.ticket = flight->second;
      ++coalesced_;
      lock.unlock();
      if (metrics_) Metrics::bump(metrics_->jobs_coalesced);
      sub.ticket->attach(std::move(on_done));
      return sub;
    }
    auto job = std::make_shared<Job>(
        Job{key, density, seq_++, std::move(work), std::move(label), std::make_shared<JobTicket>(key)});
    if (on_done) job->ticket->on_done_.push_back(std::move(on_done));
    sub.ticket = job->ticket;
    if (options_.synchronous) {
      in_flight_.emplace(key, job->ticket);
      ++running_;
      lock.unlock();
      run_job(*job);
      lock.lock();
      --running_;
      in_flight_.erase(key);
      idle_cv_.notify_all();
      sub.result = SubmitResult::kRanInline;
      return sub;
    }
    if (pending_.size() >= std::max<size_t>(options_.max_pending, 1)) {
      auto lowest = std::prev(pending_.end());
      ++rejected_;
      if (metrics_) Metrics::bump(metrics_->jobs_rejected);
      if (!(density > (*lowest)->density)) {
        size_t n = pending_.size();
        lock.unlock();
        TJ_LOG_DEBUG("compile queue full ({} pending): rejected '{}' (density {:.3g})", n,
                     job->label, density);
        sub.result = SubmitResult::kRejected;
        job->ticket->finish(JobOutcome::kRejected, Status());
        return sub;
      }
      evicted = *lowest;
      pending_.erase(lowest);
      in_flight_.erase(evicted->key);
    }
    in_flight_.emplace(key, job->ticket);
    pending_.insert(std::move(job));
    sub.result = SubmitResult::kQueued;
  }
  if (metrics_) Metrics::bump(metrics_->jobs_queued);
  work_cv_.notify_one();
  if (evicted) {
    TJ_LOG_DEBUG("compile queue full: rejected '{}' (density {:.3g}) for a denser job",
                 evicted->label, evicted->density);
    evicted->ticket->finish(JobOutcome::kRejected, Status());
  }
  return sub;
}

void CompileQueue::worker_loop() {
  // `nice` levels below the process's priority (a thread starts with its creator's), at most 19:
  // an absolute nice 10 would raise the workers of a process already running at nice 15.
  if (options_.nice != 0) {
    const auto tid = static_cast<id_t>(gettid());
    errno = 0;
    const int current = getpriority(PRIO_PROCESS, tid);
    const int target = std::min(current + options_.nice, 19);
    if (errno != 0 || setpriority(PRIO_PROCESS, tid, target) != 0)
      TJ_LOG_DEBUG("compile queue: setpriority({}) failed; compiling at the process's priority",
                   target);
  }
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      job = *pending_.begin();
      pending_.erase(pending_.begin());
      ++running_;
    }
    {
      // Kernels' teams leave this core to the compile, and to the memory release after it:
      // calls meanwhile are not quiet (payoff trials leave them out).
      const support::BackgroundBusy busy;
      run_job(*job);
      bool drained = false;
      {
        std::lock_guard lock(mu_);
        --running_;
        auto it = in_flight_.find(job->key);
        if (it != in_flight_.end() && it->second == job->ticket) in_flight_.erase(it);
        drained = pending_.empty() && running_ == 0;
      }
      // An LLVM compile allocates and frees tens of MB in this thread's malloc arena; glibc
      // keeps the freed pages resident. Return them once the queue has drained (a few ms, here,
      // off the request path): a compile landing late in a session otherwise grew RSS by ~30 MB
      // (tests/runtime/rss_test.cc under load: +17% with 10,000 calls, limit 10%).
      if (drained) release_freed_memory();
    }
    idle_cv_.notify_all();
  }
}

void CompileQueue::shutdown() {
  std::vector<std::shared_ptr<Job>> cancelled;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cancelled.assign(pending_.begin(), pending_.end());
    pending_.clear();
    for (const auto& job : cancelled) in_flight_.erase(job->key);
  }
  work_cv_.notify_all();
  idle_cv_.notify_all();
  for (const auto& job : cancelled) job->ticket->finish(JobOutcome::kCancelled, Status());
  for (std::thread& t : workers_) {
    if (!t.joinable()) continue;
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();  // shutdown() from a job: its worker returns to a loop that sees stopping_
    } else {
      t.join();
    }
  }
}

void CompileQueue::drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return (pending_.empty() || stopping_) && running_ == 0; });
}

bool CompileQueue::drain_for(int64_t timeout_ms) {
  if (timeout_ms < 0) {
    drain();
    return true;
  }
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return (pending_.empty() || stopping_) && running_ == 0; });
}

size_t CompileQueue::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

size_t CompileQueue::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

uint64_t CompileQueue::rejected() const {
  std::lock_guard lock(mu_);
  return rejected_;
}

uint64_t CompileQueue::coalesced() const {
  std::lock_guard lock(mu_);
  return coalesced_;
}

std::vector<std::string> CompileQueue::pending_labels() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& job : pending_) out.push_back(job->label);
  return out;
}

}  // namespace tierjit::runtime
