/* ptprof public C API.
 *
 * These functions are defined by libptprof_agent.so, which `ptprof run`
 * preloads. A program that calls them without linking the agent can declare
 * them weak and test for NULL, or use the Python module `ptprof`. All are
 * thread-safe, never block, and are no-ops when the process is not being
 * profiled.
 */
#ifndef PTPROF_H
#define PTPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Ends the current step; the next one begins (ProfilerStep#N+1). */
void ptprof_step(void);
/* Opens a named range on the calling thread; ranges nest. */
void ptprof_range_push(const char* name);
/* Closes the innermost open range of the calling thread. */
void ptprof_range_pop(void);
/* Records a named instant on the calling thread. */
void ptprof_mark(const char* name);
/* 1 while this process records (a window of the schedule is open, or the
 * whole run without one), 0 otherwise. Once it returns 1, the calling
 * thread's next operators are recorded. */
int ptprof_recording(void);

#ifdef __cplusplus
}
#endif

#endif /* PTPROF_H */
