/* For test_bridge_trust.py: a native thread that forks while the main
 * thread is inside `import torch` (which holds the interpreter lock while the
 * agent builds the torch bridge), once the build has taken its lock in the
 * cache. The child cannot run Python; it loads a
 * library, which is where the agent looks for the bridge again, and reports
 * whether the bridge is mapped by its exit status. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_cache[4096];
static int g_result = -1; /* the child's exit status: 0 bridge loaded, 1 not */
static pthread_t g_thread;

static int mapped(const char* name) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (maps && fgets(line, sizeof line, maps))
    if (strstr(line, name)) found = 1;
  if (maps) fclose(maps);
  return found;
}

/* Whether the bridge builder has taken its lock in the cache: the agent's
 * thread is then inside the build, waiting for it. */
static int building(void) {
  DIR* d = opendir(g_cache);
  struct dirent* e;
  int found = 0;
  while (d && (e = readdir(d)))
    if (strlen(e->d_name) > 5 && strcmp(e->d_name + strlen(e->d_name) - 5, ".lock") == 0) found = 1;
  if (d) closedir(d);
  return found;
}

static void* forker(void* arg) {
  (void)arg;
  while (!building()) usleep(20 * 1000);
  pid_t pid = fork();
  if (pid == 0) {
    dlopen("libm.so.6", RTLD_NOW);
    _exit(mapped("libptprof_torch.so") ? 0 : 1);
  }
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) g_result = WEXITSTATUS(status);
  return NULL;
}

int start(const char* cache) {
  snprintf(g_cache, sizeof g_cache, "%s", cache);
  return pthread_create(&g_thread, NULL, forker, NULL);
}

int result(void) {
  pthread_join(g_thread, NULL);
  return g_result;
}
