// Holds a T that is constructed with the owner and never destroyed. The agent
// keeps running hooks while the process runs its static destructors (other
// threads, atexit handlers), so nothing it uses may be torn down under them.
#pragma once
#include <memory>
#include <new>
#include <utility>

namespace ptprof::agent {

template <class T>
class NoDestructor {
 public:
  template <class... Args>
  explicit NoDestructor(Args&&... args) {
    std::construct_at(ptr(), std::forward<Args>(args)...);
  }
  NoDestructor(const NoDestructor&) = delete;
  NoDestructor& operator=(const NoDestructor&) = delete;

  T* get() { return ptr(); }
  const T* get() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  T* operator->() { return get(); }
  const T* operator->() const { return get(); }
  T& operator*() { return *get(); }
  const T& operator*() const { return *get(); }

 private:
  T* ptr() { return std::launder(reinterpret_cast<T*>(storage_)); }
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace ptprof::agent
