// CallWorkers (the compiled front's threads for Recalls its gRPC reading threads leave): every
// job runs, at most max_threads at once, idle threads are reused, queued work runs before the
// destructor returns; and the rule that picks where a Recall is answered.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "call_workers.hpp"
#include "check.hpp"

using namespace polarmem::front;

namespace {

// A gate jobs wait at until it opens.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int waiting = 0;
  void wait() {
    std::unique_lock lock(mutex);
    ++waiting;
    changed.notify_all();
    changed.wait(lock, [this] { return open; });
  }
  bool wait_for_waiting(int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return waiting >= count; });
  }
  void release() {
    std::lock_guard guard(mutex);
    open = true;
    changed.notify_all();
  }
};

}  // namespace

POLARMEM_TEST(every_job_runs_before_the_destructor_returns) {
  std::atomic<int> done{0};
  {
    CallWorkers workers(4);
    for (int i = 0; i < 200; ++i) workers.run([&] { done.fetch_add(1); });
  }
  CHECK(done.load() == 200);
}

POLARMEM_TEST(no_more_threads_than_the_cap_and_work_beyond_it_queues) {
  Gate gate;
  std::mutex ids_mutex;
  std::set<std::thread::id> ids;
  std::atomic<int> done{0};
  {
    CallWorkers workers(3);
    for (int i = 0; i < 5; ++i) {
      workers.run([&] {
        {
          std::lock_guard guard(ids_mutex);
          ids.insert(std::this_thread::get_id());
        }
        gate.wait();
        done.fetch_add(1);
      });
    }
    CHECK(gate.wait_for_waiting(3));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    {
      std::lock_guard guard(gate.mutex);
      CHECK(gate.waiting == 3);  // the other two are queued, not started
    }
    gate.release();
  }
  CHECK(done.load() == 5);
  CHECK(ids.size() == 3);
}

POLARMEM_TEST(an_idle_thread_takes_the_next_job) {
  std::set<std::thread::id> ids;
  CallWorkers workers(8);
  for (int i = 0; i < 20; ++i) {
    std::mutex mutex;
    std::condition_variable finished;
    bool ran = false;
    workers.run([&] {
      std::lock_guard guard(mutex);
      ids.insert(std::this_thread::get_id());
      ran = true;
      finished.notify_all();
    });
    std::unique_lock lock(mutex);
    CHECK(finished.wait_for(lock, std::chrono::seconds(10), [&] { return ran; }));
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // time to go back to idle
  }
  // One thread when each went idle in time; a few where the host was too busy for that, never
  // a thread a job (as a pool that did not reuse its threads would start).
  CHECK(ids.size() <= 5);
}

POLARMEM_TEST(the_threads_carry_their_own_name) {
  std::string name;
  {
    CallWorkers workers(1);
    workers.run([&] {
      char buffer[16] = {};
      pthread_getname_np(pthread_self(), buffer, sizeof buffer);
      name = buffer;
    });
  }
  CHECK(name == CallWorkers::kThreadName);
}

POLARMEM_TEST(reading_threads_are_half_the_cores_from_2_to_16) {
  CHECK(reading_threads(1) == 2);
  CHECK(reading_threads(2) == 2);
  CHECK(reading_threads(5) == 2);
  CHECK(reading_threads(16) == 8);
  CHECK(reading_threads(64) == 16);
}

POLARMEM_TEST(a_recall_is_answered_where_read_while_a_reader_stays_free) {
  // 2 cores, 2 reading threads: they cover the cores, every Recall is answered where read.
  for (std::size_t busy = 0; busy < 8; ++busy) CHECK(answer_where_read(busy, reading_threads(2), 2));
  // 16 cores, 8 reading threads: the eighth concurrent Recall goes to the workers.
  for (std::size_t busy = 0; busy < 7; ++busy) CHECK(answer_where_read(busy, reading_threads(16), 16));
  CHECK(!answer_where_read(7, reading_threads(16), 16));
  CHECK(!answer_where_read(12, reading_threads(16), 16));
  // 4 cores, 2 reading threads: one answers, the other keeps reading.
  CHECK(answer_where_read(0, reading_threads(4), 4));
  CHECK(!answer_where_read(1, reading_threads(4), 4));
  // Fewer usable cores than configured (an affinity mask): gRPC's readers cover them.
  CHECK(answer_where_read(5, reading_threads(16), 4));
}

int main() { return polarmem::testing::run_all(); }
