/*
 * host_cpu.c - x86-64 feature lists of host artifacts and their check
 * against CPUID (host_cpu.h).
 */
#include "host_cpu.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_CPUID 1
#endif

/* Where CPUID reports a feature: leaf, subleaf, register, bit; and which
 * register state the OS must enable (XCR0 bits) for it to be usable. */
enum { EAX, EBX, ECX, EDX };
enum { OS_NONE = 0, OS_AVX = 0x6, OS_AVX512 = 0xe6 };

typedef struct Feature {
  const char *name;               /* LLVM's name */
  unsigned leaf, sub;
  int reg, bit;
  unsigned os;
} Feature;

static const Feature features[] = {
  {"cmov", 1, 0, EDX, 15, OS_NONE},
  {"cx8", 1, 0, EDX, 8, OS_NONE},
  {"mmx", 1, 0, EDX, 23, OS_NONE},
  {"fxsr", 1, 0, EDX, 24, OS_NONE},
  {"sse", 1, 0, EDX, 25, OS_NONE},
  {"sse2", 1, 0, EDX, 26, OS_NONE},
  {"sse3", 1, 0, ECX, 0, OS_NONE},
  {"pclmul", 1, 0, ECX, 1, OS_NONE},
  {"ssse3", 1, 0, ECX, 9, OS_NONE},
  {"fma", 1, 0, ECX, 12, OS_AVX},
  {"cx16", 1, 0, ECX, 13, OS_NONE},
  {"sse4.1", 1, 0, ECX, 19, OS_NONE},
  {"sse4.2", 1, 0, ECX, 20, OS_NONE},
  {"movbe", 1, 0, ECX, 22, OS_NONE},
  {"popcnt", 1, 0, ECX, 23, OS_NONE},
  {"aes", 1, 0, ECX, 25, OS_NONE},
  {"xsave", 1, 0, ECX, 26, OS_NONE},
  {"avx", 1, 0, ECX, 28, OS_AVX},
  {"f16c", 1, 0, ECX, 29, OS_AVX},
  {"rdrnd", 1, 0, ECX, 30, OS_NONE},
  {"bmi", 7, 0, EBX, 3, OS_NONE},
  {"avx2", 7, 0, EBX, 5, OS_AVX},
  {"bmi2", 7, 0, EBX, 8, OS_NONE},
  {"avx512f", 7, 0, EBX, 16, OS_AVX512},
  {"avx512dq", 7, 0, EBX, 17, OS_AVX512},
  {"adx", 7, 0, EBX, 19, OS_NONE},
  {"avx512ifma", 7, 0, EBX, 21, OS_AVX512},
  {"avx512cd", 7, 0, EBX, 28, OS_AVX512},
  {"sha", 7, 0, EBX, 29, OS_NONE},
  {"avx512bw", 7, 0, EBX, 30, OS_AVX512},
  {"avx512vl", 7, 0, EBX, 31, OS_AVX512},
  {"avx512vbmi", 7, 0, ECX, 1, OS_AVX512},
  {"avx512vbmi2", 7, 0, ECX, 6, OS_AVX512},
  {"gfni", 7, 0, ECX, 8, OS_NONE},
  {"vaes", 7, 0, ECX, 9, OS_AVX},
  {"vpclmulqdq", 7, 0, ECX, 10, OS_AVX},
  {"avx512vnni", 7, 0, ECX, 11, OS_AVX512},
  {"avx512bitalg", 7, 0, ECX, 12, OS_AVX512},
  {"avx512vpopcntdq", 7, 0, ECX, 14, OS_AVX512},
  {"avx512fp16", 7, 0, EDX, 23, OS_AVX512},
  {"avxvnni", 7, 1, EAX, 4, OS_AVX},
  {"avx512bf16", 7, 1, EAX, 5, OS_AVX512},
  {"lzcnt", 0x80000001u, 0, ECX, 5, OS_NONE},
  {"sse4a", 0x80000001u, 0, ECX, 6, OS_NONE},
  {"prfchw", 0x80000001u, 0, ECX, 8, OS_NONE},
};

#define V1 "cmov,cx8,mmx,fxsr,sse,sse2"
#define V2 V1 ",sse3,ssse3,cx16,sse4.1,sse4.2,popcnt"
#define V3 V2 ",fma,movbe,xsave,avx,f16c,bmi,avx2,bmi2,lzcnt"
#define V4 V3 ",avx512f,avx512dq,avx512cd,avx512bw,avx512vl"

const char *host_cpu_level_features(const char *level) {
  if (strcmp(level, "x86-64") == 0) return V1;
  if (strcmp(level, "x86-64-v2") == 0) return V2;
  if (strcmp(level, "x86-64-v3") == 0) return V3;
  if (strcmp(level, "x86-64-v4") == 0) return V4;
  return NULL;
}

static const Feature *find(const char *name, size_t n) {
  for (size_t k = 0; k < ARRAY_LEN(features); k++)
    if (strlen(features[k].name) == n && memcmp(features[k].name, name, n) == 0)
      return &features[k];
  return NULL;
}

/* Whether the comma-separated list holds name (+ enabled, for LLVM
 * strings: entries "+name"). */
static bool listed(const char *list, const char *name, bool plus) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (plus) {
      if (len == n + 1 && p[0] == '+' && memcmp(p + 1, name, n) == 0) return true;
    } else if (len == n && memcmp(p, name, n) == 0) {
      return true;
    }
    if (!e) break;
    p = e + 1;
  }
  return false;
}

void host_cpu_checkable(const char *llvm_features, StrBuf *out) {
  bool first = true;
  for (size_t k = 0; k < ARRAY_LEN(features); k++)
    if (listed(llvm_features, features[k].name, true)) {
      sb_printf(out, "%s%s", first ? "" : ",", features[k].name);
      first = false;
    }
}

#ifdef HAVE_CPUID
static unsigned xcr0(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))  /* OSXSAVE */
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return lo;
}

static bool cpu_has(const Feature *f) {
  unsigned r[4];
  if (!__get_cpuid_count(f->leaf, f->sub, &r[EAX], &r[EBX], &r[ECX], &r[EDX]))
    return false;
  if (!(r[f->reg] & (1u << f->bit)))
    return false;
  return (xcr0() & f->os) == f->os;
}
#else
static bool cpu_has(const Feature *f) {
  (void)f;
  return false;
}
#endif

bool host_cpu_has(const char *list, StrBuf *missing) {
  bool ok = true;
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    const Feature *f = len ? find(p, len) : NULL;
    if (len && (!f || !cpu_has(f))) {
      sb_printf(missing, "%s%.*s", ok ? "" : ",", (int)len, p);
      ok = false;
    }
    if (!e) break;
    p = e + 1;
  }
  return ok;
}
