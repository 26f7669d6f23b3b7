/*
 * phase_time.c - wall-clock timers of a compilation's phases for
 * --time-passes: named phases in first-seen order, each with the seconds
 * spent in it, printed as a table with each phase's share of the total.
 */
#include "support.h"

#include <string.h>
#include <time.h>

double clock_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void phase_add(PhaseTimes *t, const char *name, double seconds) {
  if (!t)
    return;
  for (int k = 0; k < t->len; k++)
    if (strcmp(t->data[k].name, name) == 0) {
      t->data[k].seconds += seconds;
      t->data[k].runs++;
      return;
    }
  vec_push(t, ((PhaseTime){name, seconds, 1}));
}

double phase_since(PhaseTimes *t, const char *name, double t0) {
  double t1 = clock_seconds();
  phase_add(t, name, t1 - t0);
  return t1;
}

void phase_print(const PhaseTimes *t, const char *title, FILE *out) {
  double total = 0;
  for (int k = 0; k < t->len; k++)
    total += t->data[k].seconds;
  fprintf(out, "%s:\n", title);
  fprintf(out, "  %-44s %6s %10s %6s\n", "phase", "runs", "seconds", "%");
  for (int k = 0; k < t->len; k++)
    fprintf(out, "  %-44s %6d %10.6f %6.1f\n", t->data[k].name, t->data[k].runs,
            t->data[k].seconds,
            total > 0 ? 100.0 * t->data[k].seconds / total : 0.0);
  fprintf(out, "  %-44s %6s %10.6f %6.1f\n", "total (phases)", "", total, 100.0);
}
