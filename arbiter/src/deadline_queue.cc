// DeadlineQueue (deadline_queue.h): popping what is due.
#include "deadline_queue.h"

namespace gshare::arbiter {

std::vector<DeadlineQueue::Entry> DeadlineQueue::PopDue(uint64_t now_ns) {
  std::vector<Entry> due;
  while (!heap_.empty() && heap_.top().at_ns <= now_ns) {
    due.push_back(heap_.top());
    heap_.pop();
  }
  return due;
}

}  // namespace gshare::arbiter
