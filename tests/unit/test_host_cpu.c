/*
 * test_host_cpu.c - the feature lists of host artifacts
 * (lib/runtime/host_cpu.c): psABI levels, filtering an LLVM feature string,
 * and the CPUID check (baseline x86-64 features present, unknown names
 * missing and named).
 */
#include <criterion/criterion.h>

#include <string.h>

#include "../../lib/runtime/host_cpu.h"

Test(host_cpu, levels) {
  cr_assert_str_eq(host_cpu_level_features("x86-64"), "cmov,cx8,mmx,fxsr,sse,sse2");
  cr_assert(strstr(host_cpu_level_features("x86-64-v2"), ",sse4.2,popcnt"));
  cr_assert(strstr(host_cpu_level_features("x86-64-v3"), ",avx2,"));
  cr_assert(strstr(host_cpu_level_features("x86-64-v4"), ",avx512vl"));
  cr_assert_null(host_cpu_level_features("native"));
  cr_assert_null(host_cpu_level_features("skylake"));
}

Test(host_cpu, checkable_subset_of_llvm_string) {
  StrBuf b;
  sb_init(&b);
  host_cpu_checkable("+sse2,-avx512f,+avx2,+fma,+some-new-thing,-lzcnt,+sse4.1", &b);
  /* the table's order, enabled ones only, unknown names dropped */
  cr_assert_str_eq(b.s, "sse2,fma,sse4.1,avx2");
  sb_free(&b);
  sb_init(&b);
  host_cpu_checkable("", &b);
  cr_assert(b.s == NULL || b.s[0] == '\0');
  sb_free(&b);
}

Test(host_cpu, check_against_this_cpu) {
  StrBuf missing;
  sb_init(&missing);
#if defined(__x86_64__)
  cr_assert(host_cpu_has("cmov,sse,sse2", &missing), "missing %s", missing.s);
  cr_assert(host_cpu_has(host_cpu_level_features("x86-64"), &missing));
#endif
  cr_assert(host_cpu_has("", &missing));
  cr_assert_not(host_cpu_has("sse2,xhlo-test-a,xhlo-test-b", &missing));
  cr_assert_str_eq(missing.s, "xhlo-test-a,xhlo-test-b");
  sb_free(&missing);
}
