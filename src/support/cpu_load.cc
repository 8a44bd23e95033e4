// Foreign CPU load from /proc/stat (see cpu_load.h): machine busy time minus this process's CPU
// time, per second of wall time, refreshed lazily by whichever caller finds the sample stale.
#include "support/cpu_load.h"

#include "support/log.h"

#include <dirent.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace tierjit::support {
namespace {

constexpr double kPeriodSeconds = 0.1;

double seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Busy seconds of all cores since boot (user + nice + system + irq + softirq + steal), or < 0.
double machine_busy_seconds() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                     steal = 0;
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice,
                            &system, &idle, &iowait, &irq, &softirq, &steal);
  std::fclose(f);
  if (n < 4) return -1;
  static const double tick = 1.0 / static_cast<double>(std::max(1L, sysconf(_SC_CLK_TCK)));
  return static_cast<double>(user + nice + system + irq + softirq + steal) * tick;
}

}  // namespace

int procs_running_now() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  char line[256];
  int n = -1;
  // Lines longer than the buffer (intr, softirq) come in pieces; only a piece starting a line
  // can start with "procs_running".
  bool line_start = true;
  while (std::fgets(line, sizeof line, f)) {
    if (line_start && std::strncmp(line, "procs_running ", 14) == 0) {
      n = std::atoi(line + 14);
      break;
    }
    line_start = std::strchr(line, '\n') != nullptr;
  }
  std::fclose(f);
  return n;
}

int own_threads_running_now() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  int n = 0;
  char path[64], buf[512];
  while (const dirent* d = readdir(dir)) {
    if (d->d_name[0] == '.') continue;
    std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", d->d_name);
    std::FILE* f = std::fopen(path, "r");
    if (!f) continue;  // the thread ended meanwhile
    const size_t len = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[len] = 0;
    // "tid (comm) S ...": the state follows the last ')' (comm may hold spaces and parens).
    const char* close = std::strrchr(buf, ')');
    if (close && close[1] == ' ' && close[2] == 'R') ++n;
  }
  closedir(dir);
  return n;
}

namespace {

struct Sampler {
  std::mutex mu;               // held by the one caller refreshing the sample
  std::atomic<double> due{0};  // monotonic seconds after which the sample is stale
  std::atomic<double> foreign{0};
  double wall = 0, busy = -1, own = 0;  // the previous reading (under mu)

  double get() {
    const double now = seconds(CLOCK_MONOTONIC);
    if (now >= due.load(std::memory_order_relaxed)) {
      std::unique_lock<std::mutex> lock(mu, std::try_to_lock);
      if (lock.owns_lock() && now >= due.load(std::memory_order_relaxed)) refresh(now);
    }
    return foreign.load(std::memory_order_relaxed);
  }

  void refresh(double now) {
    const double b = machine_busy_seconds(), o = seconds(CLOCK_PROCESS_CPUTIME_ID);
    if (busy >= 0 && b >= 0 && now > wall) {
      const double f = ((b - busy) - (o - own)) / (now - wall);
      foreign.store(std::max(0.0, f), std::memory_order_relaxed);
    } else if (busy < 0) {
      // The first reading has no period to measure over: until the next one (100 ms later) the
      // tasks of other processes running at this instant stand for the foreign load. Assuming
      // idle cores here sent the first calls of a process to a team whose second thread waited
      // for a core another process held: bert_tiny's first call took 10.2-10.6 ms beside a busy
      // loop, 1.4-1.8 ms on one thread. This process's own running threads (the caller, a
      // compile thread just starting) are not foreign.
      const int running = procs_running_now();
      const int own_running = std::max(1, own_threads_running_now());
      if (running > own_running)
        foreign.store(static_cast<double>(running - own_running), std::memory_order_relaxed);
    }
    wall = now, busy = b, own = o;
    due.store(now + kPeriodSeconds, std::memory_order_relaxed);
  }
};

// Set by override_foreign_busy_cores (< 0: not overridden).
std::atomic<double> g_override{-1};

// TIERJIT_FOREIGN_LOAD as a number of cores >= 0, or -1 (unset or invalid: measure), read on
// first use (not at load time: the CLI re-executes itself before main's work).
double env_foreign_load() {
  static const double v = [] {
    const char* e = std::getenv("TIERJIT_FOREIGN_LOAD");
    if (!e || !*e) return -1.0;
    // Decimal only (from_chars: no hex, no leading blanks), finite and >= 0.
    double d = -1;
    const char* last = e + std::strlen(e);
    const auto [ptr, ec] = std::from_chars(e, last, d, std::chars_format::general);
    if (ec == std::errc() && ptr == last && std::isfinite(d) && d >= 0) return d;
    TJ_LOG_WARN("TIERJIT_FOREIGN_LOAD='{}' is not a finite decimal number of cores >= 0: "
                "ignored, the load is measured", e);
    return -1.0;
  }();
  return v;
}

}  // namespace

double foreign_busy_cores() {
  const double forced = g_override.load(std::memory_order_relaxed);
  if (forced >= 0) return forced;
  if (const double env = env_foreign_load(); env >= 0) return env;
  static Sampler sampler;
  return sampler.get();
}

void override_foreign_busy_cores(double cores) {
  g_override.store(cores, std::memory_order_relaxed);
}

int usable_cores() {
  static const int cores = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
    return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  }();
  return cores;
}

namespace {
std::atomic<int> g_background{0};
std::atomic<uint64_t> g_background_starts{0};
}  // namespace

BackgroundBusy::BackgroundBusy() {
  g_background_starts.fetch_add(1, std::memory_order_relaxed);
  g_background.fetch_add(1, std::memory_order_relaxed);
}
BackgroundBusy::~BackgroundBusy() { g_background.fetch_sub(1, std::memory_order_relaxed); }
int background_busy_threads() { return g_background.load(std::memory_order_relaxed); }
uint64_t background_busy_starts() { return g_background_starts.load(std::memory_order_relaxed); }

bool spare_cores_for(int threads) {
  return foreign_busy_cores() + background_busy_threads() <=
         static_cast<double>(usable_cores() - threads) + 0.5;
}

int team_for(int requested) {
  if (requested <= 1) return 1;
  const int team = std::min(requested, usable_cores());
  return team > 1 && spare_cores_for(team) ? team : 1;
}

}  // namespace tierjit::support
