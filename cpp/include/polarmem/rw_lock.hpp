// A readers-writer lock that prefers writers. std::shared_mutex on glibc prefers readers, so a
// steady stream of searches would starve every add/remove; here a waiting writer holds new
// readers back, and searches see each write either wholly before or wholly after.
#pragma once

#include <pthread.h>

namespace polarmem {

class RwLock {
 public:
  RwLock() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&lock_, &attr);
    pthread_rwlockattr_destroy(&attr);
  }
  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;
  ~RwLock() { pthread_rwlock_destroy(&lock_); }

  // Names follow the standard SharedMutex requirements so std::shared_lock / unique_lock work.
  void lock() { pthread_rwlock_wrlock(&lock_); }
  void unlock() { pthread_rwlock_unlock(&lock_); }
  void lock_shared() { pthread_rwlock_rdlock(&lock_); }
  void unlock_shared() { pthread_rwlock_unlock(&lock_); }

 private:
  pthread_rwlock_t lock_;
};

}  // namespace polarmem
