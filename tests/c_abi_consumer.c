/* A C99 host of libmoejit.so (built with -std=c99 -pedantic -Werror): the
 * version, typed errors with the thread's last-error text, struct sizes,
 * warming a cache for sm_80 with no GPU (twice: compiled, then all cached),
 * a bad arch, an unwritable root, and the log callback. argv[1] is a
 * scratch folder that does not exist yet. Prints each failed check; exits 1
 * if any failed. */
#include <moejit/moejit.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what) {
  if (!ok) {
    printf("FAILED: %s (last error: %s)\n", what, moejit_last_error());
    ++failures;
  }
}

static int info_messages = 0;
static void on_log(int level, const char *message, void *user) {
  (void)message;
  if (level == MOEJIT_LOG_INFO && user == &info_messages)
    ++info_messages;
}

int main(int argc, char **argv) {
  char root[4096], file_root[4096];
  moejit_shape shape = {2, 256, 128, 8, MOEJIT_BF16};
  moejit_warm_report report = MOEJIT_WARM_REPORT_INIT;
  moejit_runtime_options options = MOEJIT_RUNTIME_OPTIONS_INIT;
  moejit_runtime *runtime = NULL;
  moejit_kernels *kernels = NULL;
  moejit_status status;
  FILE *f;
  if (argc != 2)
    return 2;
  snprintf(root, sizeof root, "%s/cache", argv[1]);
  snprintf(file_root, sizeof file_root, "%s/a-file", argv[1]);

  check(strcmp(moejit_version(), "0.2.0") == 0, "version");
  check(strcmp(moejit_last_error(), "") == 0, "no error before any call");

  status = moejit_runtime_create(0, NULL, &runtime);
  check(status == MOEJIT_OK || status == MOEJIT_NO_DEVICE, "runtime on device 0 or NoDevice");
  if (status == MOEJIT_NO_DEVICE) {
    check(runtime == NULL, "no handle on failure");
    check(strlen(moejit_last_error()) > 0, "NoDevice says why");
  }
  moejit_runtime_destroy(runtime);
  check(moejit_runtime_create(0, NULL, NULL) == MOEJIT_INVALID_ARGUMENT, "NULL out");
  options.struct_size = 4;
  check(moejit_runtime_create(0, &options, &runtime) == MOEJIT_INVALID_ARGUMENT,
        "struct_size too small");
  check(strstr(moejit_last_error(), "struct_size") != NULL, "struct_size named");
  options = (moejit_runtime_options)MOEJIT_RUNTIME_OPTIONS_INIT;
  options.combine = 7;
  check(moejit_runtime_create(0, &options, &runtime) == MOEJIT_INVALID_ARGUMENT &&
            strstr(moejit_last_error(), "options.combine") != NULL,
        "a combine mode that is not one");
  /* A caller built before `combine` existed: its struct ends at `tuning`. */
  options.struct_size = offsetof(moejit_runtime_options, combine);
  status = moejit_runtime_create(0, &options, &runtime);
  check(status == MOEJIT_OK || status == MOEJIT_NO_DEVICE, "options without combine accepted");
  moejit_runtime_destroy(runtime);
  runtime = NULL;
  options = (moejit_runtime_options)MOEJIT_RUNTIME_OPTIONS_INIT;
  check(moejit_get(NULL, &shape, &kernels) == MOEJIT_INVALID_ARGUMENT, "NULL runtime");
  check(moejit_workspace_bytes(NULL, 1, NULL) == MOEJIT_INVALID_ARGUMENT, "NULL kernels");

  moejit_set_log_callback(on_log, &info_messages);
  status = moejit_warm(&shape, "sm_80", NULL, root, &report);
  check(status == MOEJIT_OK, "warm sm_80");
  check(report.kernels > 0 && report.compiled == report.kernels && report.not_saved == 0,
        "first warm compiles and saves every kernel");
  check(info_messages > 0, "compiles reach the log callback (MOEJIT_LOG_LEVEL=info)");
  moejit_set_log_callback(NULL, NULL);
  status = moejit_warm(&shape, "sm_80", NULL, root, &report);
  check(status == MOEJIT_OK && report.compiled == 0, "second warm finds every kernel cached");

  check(moejit_warm(&shape, "sm_80a", NULL, root, NULL) == MOEJIT_INVALID_ARGUMENT, "bad arch");
  check(strstr(moejit_last_error(), "unsupported target 'sm_80a'") != NULL, "bad arch named");
  shape.hidden = 100;
  check(moejit_warm(&shape, "sm_80", NULL, root, NULL) == MOEJIT_INVALID_SHAPE, "bad shape");
  shape.hidden = 256;

  f = fopen(file_root, "w");
  check(f != NULL, "scratch file");
  if (f)
    fclose(f);
  status = moejit_warm(&shape, "sm_80", NULL, file_root, &report);
  check(status == MOEJIT_INVALID_ARGUMENT && report.not_saved == report.kernels,
        "warm into a root that is a file saves nothing and says so");
  check(strstr(moejit_last_error(), "not saved") != NULL, "not saved named");

  if (failures == 0)
    printf("C ABI: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
