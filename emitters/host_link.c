/*
 * host_link.c - xhloc's own linker for its host kernels (host_link.h).
 *
 * Running `ld -shared` on a small module's object costs more than the whole
 * rest of its compilation (a process, the linker's startup, reading libm
 * and libc).  What the object holds is simple, so xhloc lays out the shared
 * object itself:
 *
 *   page 0    R    ELF header, program headers, .hash, .dynsym, .dynstr,
 *                  .rela.dyn, the object's read-only sections
 *   next page R+X  the object's code sections, then one PLT stub per
 *                  external function called
 *   next page R+W  .dynamic, .got, the object's writable sections
 *   (not loaded)   .shstrtab and the section headers, for readelf and perf
 *
 * File offsets equal virtual addresses.  Calls and PC-relative references
 * inside the object are resolved here; an external symbol (libm's expf,
 * memcpy) gets a GOT slot that the dynamic loader fills (GLOB_DAT, bound at
 * load), and calls to it go through a stub `jmp *slot(%rip)`.  Absolute
 * 64-bit words in writable data become RELATIVE (or symbol) relocations.
 * Exported: the object's global definitions of default or protected
 * visibility, which are the kernels xhlo-run looks up with dlsym.
 */
#include "host_link.h"

#include <elf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/support/support.h"

enum { SEG_NONE, SEG_RO, SEG_RX, SEG_RW };
enum { PAGE = 4096, PLT_STUB = 16 };

typedef struct {
  const Elf64_Shdr *sh;
  const char *name;
  int seg;          /* SEG_*; SEG_NONE: not in the output */
  uint64_t addr;    /* in the output (== file offset) */
  int out_index;    /* its section header index in the output */
} InSec;

typedef struct {
  const unsigned char *obj;
  size_t n;
  const Elf64_Ehdr *eh;
  InSec *secs;
  int nsec;
  const Elf64_Sym *syms;
  int nsym;
  const char *strtab;
  size_t strtab_size;
  /* per input symbol */
  int *got;         /* GOT slot, or -1 */
  int *plt;         /* PLT stub, or -1 */
  int *dyn;         /* .dynsym index, or 0 */
  int ngot, nplt, ndyn, nreloc_dyn;
  char *why;
  size_t whylen;
} Link;

static bool fail(Link *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->why, l->whylen, fmt, ap);
  va_end(ap);
  return false;
}

static uint64_t align_up(uint64_t x, uint64_t a) {
  return a > 1 ? (x + a - 1) / a * a : x;
}

/* A NUL-terminated name at off in a string table of size bytes, or NULL. */
static const char *str_at(const char *tab, size_t size, uint64_t off) {
  if (off >= size || !memchr(tab + off, 0, size - off))
    return NULL;
  return tab + off;
}

static bool read_sections(Link *l) {
  const Elf64_Ehdr *eh = l->eh;
  if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 ||
      eh->e_shoff > l->n || eh->e_shoff % 8 != 0 ||
      (l->n - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum ||
      eh->e_shstrndx >= eh->e_shnum)
    return fail(l, "malformed section header table");
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(l->obj + eh->e_shoff);
  const Elf64_Shdr *names = &sh[eh->e_shstrndx];
  if (names->sh_offset > l->n || names->sh_size > l->n - names->sh_offset)
    return fail(l, "malformed section name table");
  const char *ntab = (const char *)l->obj + names->sh_offset;
  l->nsec = eh->e_shnum;
  l->secs = xcalloc((size_t)l->nsec, sizeof *l->secs);
  for (int k = 0; k < l->nsec; k++) {
    InSec *s = &l->secs[k];
    s->sh = &sh[k];
    s->name = str_at(ntab, names->sh_size, sh[k].sh_name);
    if (!s->name)
      return fail(l, "section %d has no name", k);
    if (sh[k].sh_type != SHT_NOBITS &&
        (sh[k].sh_offset > l->n || sh[k].sh_size > l->n - sh[k].sh_offset))
      return fail(l, "section %s lies outside the object", s->name);
    if (sh[k].sh_type == SHT_NOBITS && sh[k].sh_size > (1u << 30))
      return fail(l, "section %s holds %llu bytes", s->name,
                  (unsigned long long)sh[k].sh_size);
    if (sh[k].sh_addralign > PAGE)
      return fail(l, "section %s wants %llu-byte alignment", s->name,
                  (unsigned long long)sh[k].sh_addralign);
    if (sh[k].sh_type == SHT_INIT_ARRAY || sh[k].sh_type == SHT_FINI_ARRAY ||
        sh[k].sh_type == SHT_PREINIT_ARRAY || strncmp(s->name, ".ctors", 6) == 0 ||
        strncmp(s->name, ".dtors", 6) == 0 || strcmp(s->name, ".init") == 0 ||
        strcmp(s->name, ".fini") == 0)
      return fail(l, "section %s holds constructors", s->name);
    if (sh[k].sh_flags & SHF_TLS)
      return fail(l, "section %s is thread-local", s->name);
    if (sh[k].sh_type == SHT_REL)
      return fail(l, "section %s holds REL relocations", s->name);
    if (sh[k].sh_type == SHT_SYMTAB) {
      if (l->syms)
        return fail(l, "two symbol tables");
      if (sh[k].sh_entsize != sizeof(Elf64_Sym) || sh[k].sh_offset % 8 != 0 ||
          sh[k].sh_link >= (unsigned)l->nsec)
        return fail(l, "malformed symbol table");
      l->syms = (const Elf64_Sym *)(l->obj + sh[k].sh_offset);
      l->nsym = (int)(sh[k].sh_size / sizeof(Elf64_Sym));
    }
    /* unwind tables are dropped: nothing here unwinds through kernels */
    bool unwind = sh[k].sh_type == SHT_X86_64_UNWIND ||
                  strcmp(s->name, ".eh_frame") == 0;
    if ((sh[k].sh_flags & SHF_ALLOC) && !unwind)
      s->seg = (sh[k].sh_flags & SHF_EXECINSTR) ? SEG_RX
             : (sh[k].sh_flags & SHF_WRITE)     ? SEG_RW
                                                : SEG_RO;
  }
  if (!l->syms)
    return fail(l, "no symbol table");
  for (int k = 0; k < l->nsec; k++)
    if (sh[k].sh_type == SHT_SYMTAB) {
      const Elf64_Shdr *str = &sh[sh[k].sh_link];
      if (str->sh_type != SHT_STRTAB || str->sh_offset > l->n ||
          str->sh_size > l->n - str->sh_offset)
        return fail(l, "malformed symbol name table");
      l->strtab = (const char *)l->obj + str->sh_offset;
      l->strtab_size = str->sh_size;
    }
  return true;
}

static const char *sym_name(Link *l, int i) {
  return str_at(l->strtab, l->strtab_size, l->syms[i].st_name);
}

static bool is_got_base(Link *l, int i) {
  const char *nm = sym_name(l, i);
  return nm && strcmp(nm, "_GLOBAL_OFFSET_TABLE_") == 0;
}

static bool is_undefined(Link *l, int i) {
  return l->syms[i].st_shndx == SHN_UNDEF && i != 0;
}

/* Which symbols go into .dynsym: undefined ones and exported definitions. */
static bool pick_dynamic_symbols(Link *l) {
  l->got = xmalloc((size_t)l->nsym * sizeof(int));
  l->plt = xmalloc((size_t)l->nsym * sizeof(int));
  l->dyn = xcalloc((size_t)l->nsym, sizeof(int));
  l->ndyn = 1;
  for (int i = 0; i < l->nsym; i++) {
    l->got[i] = l->plt[i] = -1;
    const Elf64_Sym *s = &l->syms[i];
    if (!sym_name(l, i))
      return fail(l, "symbol %d has no name", i);
    if (s->st_shndx == SHN_COMMON)
      return fail(l, "common symbol %s", sym_name(l, i));
    if (ELF64_ST_TYPE(s->st_info) == STT_TLS || ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC)
      return fail(l, "symbol %s is thread-local or an ifunc", sym_name(l, i));
    if (s->st_shndx != SHN_UNDEF && s->st_shndx != SHN_ABS &&
        s->st_shndx >= l->nsec)
      return fail(l, "symbol %s in section %u", sym_name(l, i), s->st_shndx);
    if (i == 0)
      continue;
    if (ELF64_ST_BIND(s->st_info) == STB_LOCAL) {
      if (s->st_shndx == SHN_UNDEF && ELF64_ST_TYPE(s->st_info) != STT_SECTION)
        return fail(l, "undefined local symbol %s", sym_name(l, i));
      continue;
    }
    int vis = ELF64_ST_VISIBILITY(s->st_other);
    if (is_undefined(l, i)) {
      if (!is_got_base(l, i))
        l->dyn[i] = l->ndyn++;
    } else if ((vis == STV_DEFAULT || vis == STV_PROTECTED) &&
               (s->st_shndx == SHN_ABS || l->secs[s->st_shndx].seg != SEG_NONE)) {
      l->dyn[i] = l->ndyn++;
    }
  }
  return true;
}

/* The kept section a relocation section applies to, or NULL. */
static InSec *reloc_target(Link *l, const Elf64_Shdr *rs) {
  if (rs->sh_type != SHT_RELA || rs->sh_info >= (unsigned)l->nsec ||
      l->secs[rs->sh_info].seg == SEG_NONE)
    return NULL;
  return &l->secs[rs->sh_info];
}

static bool check_rela(Link *l, const Elf64_Shdr *rs) {
  if (rs->sh_entsize != sizeof(Elf64_Rela) || rs->sh_offset % 8 != 0 ||
      rs->sh_link >= (unsigned)l->nsec ||
      l->secs[rs->sh_link].sh->sh_type != SHT_SYMTAB)
    return fail(l, "malformed relocation section");
  return true;
}

/* First walk over the relocations: GOT slots, PLT stubs, dynamic relocs. */
static bool plan_relocations(Link *l) {
  for (int k = 0; k < l->nsec; k++) {
    const Elf64_Shdr *rs = l->secs[k].sh;
    InSec *t = reloc_target(l, rs);
    if (!t)
      continue;
    if (!check_rela(l, rs))
      return false;
    const Elf64_Rela *r = (const Elf64_Rela *)(l->obj + rs->sh_offset);
    size_t nr = rs->sh_size / sizeof *r;
    for (size_t j = 0; j < nr; j++) {
      uint32_t type = ELF64_R_TYPE(r[j].r_info);
      uint32_t si = ELF64_R_SYM(r[j].r_info);
      if (si >= (uint32_t)l->nsym)
        return fail(l, "relocation against symbol %u of %d", si, l->nsym);
      const Elf64_Sym *s = &l->syms[si];
      bool undef = is_undefined(l, (int)si) && !is_got_base(l, (int)si);
      if (!undef && s->st_shndx != SHN_ABS && s->st_shndx != SHN_UNDEF &&
          l->secs[s->st_shndx].seg == SEG_NONE)
        return fail(l, "relocation in %s against dropped section %s", t->name,
                    l->secs[s->st_shndx].name);
      switch (type) {
      case R_X86_64_NONE:
        break;
      case R_X86_64_PC32: case R_X86_64_PLT32: case R_X86_64_PC64:
        if (undef) {
          if (type != R_X86_64_PLT32)
            return fail(l, "PC-relative data reference to external %s",
                        sym_name(l, (int)si));
          if (l->plt[si] < 0)
            l->plt[si] = l->nplt++;
          if (l->got[si] < 0) {
            l->got[si] = l->ngot++;
            l->nreloc_dyn++;
          }
        }
        break;
      case R_X86_64_GOTPCREL: case R_X86_64_GOTPCRELX:
      case R_X86_64_REX_GOTPCRELX:
        if (l->got[si] < 0) {
          l->got[si] = l->ngot++;
          l->nreloc_dyn++;
        }
        break;
      case R_X86_64_64:
        if (t->seg != SEG_RW)
          return fail(l, "absolute address in read-only section %s", t->name);
        l->nreloc_dyn++;
        break;
      default:
        return fail(l, "relocation type %u in %s", type, t->name);
      }
    }
  }
  return true;
}

typedef struct {
  uint64_t hash, dynsym, dynstr, rela, plt, dynamic, got, shstr, shdr;
  uint64_t ro_end, rx_start, rx_end, rw_start, rw_end, total;
  size_t dynstr_size, ndynamic, nshdr;
} Layout;

static const char *const needed[] = {"libm.so.6", "libc.so.6"};

static uint64_t place(Link *l, int seg, uint64_t off) {
  for (int k = 0; k < l->nsec; k++)
    if (l->secs[k].seg == seg) {
      off = align_up(off, l->secs[k].sh->sh_addralign);
      l->secs[k].addr = off;
      off += l->secs[k].sh->sh_size;
    }
  return off;
}

static void lay_out(Link *l, Layout *y) {
  uint64_t off = sizeof(Elf64_Ehdr) + 5 * sizeof(Elf64_Phdr);
  y->hash = off = align_up(off, 8);
  off += (2 + 2 * (uint64_t)l->ndyn) * 4;
  y->dynsym = off = align_up(off, 8);
  off += (uint64_t)l->ndyn * sizeof(Elf64_Sym);
  y->dynstr = off;
  y->dynstr_size = 1;
  for (size_t k = 0; k < ARRAY_LEN(needed); k++)
    y->dynstr_size += strlen(needed[k]) + 1;
  for (int i = 0; i < l->nsym; i++)
    if (l->dyn[i])
      y->dynstr_size += strlen(sym_name(l, i)) + 1;
  off += y->dynstr_size;
  y->rela = off = align_up(off, 8);
  off += (uint64_t)l->nreloc_dyn * sizeof(Elf64_Rela);
  y->ro_end = place(l, SEG_RO, off);
  y->rx_start = align_up(y->ro_end, PAGE);
  off = place(l, SEG_RX, y->rx_start);
  y->plt = off = align_up(off, 16);
  y->rx_end = off + (uint64_t)l->nplt * PLT_STUB;
  y->rw_start = align_up(y->rx_end, PAGE);
  y->ndynamic = ARRAY_LEN(needed) + 5 + (l->nreloc_dyn ? 3 : 0) + 1;
  y->dynamic = y->rw_start;
  off = y->dynamic + y->ndynamic * sizeof(Elf64_Dyn);
  y->got = off = align_up(off, 8);
  off += (uint64_t)l->ngot * 8;
  y->rw_end = place(l, SEG_RW, off);
  y->shstr = y->rw_end;
}

static uint32_t elf_hash(const char *s) {
  uint32_t h = 0;
  for (; *s; s++) {
    h = (h << 4) + (unsigned char)*s;
    uint32_t g = h & 0xf0000000u;
    if (g)
      h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

/* The output address of symbol i (a PLT stub for an external function). */
static uint64_t sym_addr(Link *l, const Layout *y, int i) {
  const Elf64_Sym *s = &l->syms[i];
  if (is_got_base(l, i))
    return y->got;
  if (s->st_shndx == SHN_UNDEF)
    return l->plt[i] >= 0 ? y->plt + (uint64_t)l->plt[i] * PLT_STUB : 0;
  if (s->st_shndx == SHN_ABS)
    return s->st_value;
  return l->secs[s->st_shndx].addr + s->st_value;
}

static void put_rela(unsigned char *b, uint64_t *at, uint64_t where, uint32_t sym,
                     uint32_t type, int64_t addend) {
  Elf64_Rela r = {where, ELF64_R_INFO(sym, type), addend};
  memcpy(b + *at, &r, sizeof r);
  *at += sizeof r;
}

static bool fits32(int64_t v) {
  return v >= INT32_MIN && v <= INT32_MAX;
}

/* Second walk: patch the code and data, write the dynamic relocations. */
static bool apply_relocations(Link *l, const Layout *y, unsigned char *b) {
  uint64_t rat = y->rela;
  for (int i = 0; i < l->nsym; i++) {
    if (l->got[i] < 0)
      continue;
    uint64_t slot = y->got + (uint64_t)l->got[i] * 8;
    if (is_undefined(l, i) && !is_got_base(l, i))
      put_rela(b, &rat, slot, (uint32_t)l->dyn[i], R_X86_64_GLOB_DAT, 0);
    else
      put_rela(b, &rat, slot, 0, R_X86_64_RELATIVE, (int64_t)sym_addr(l, y, i));
  }
  for (int i = 0; i < l->nsym; i++) {
    if (l->plt[i] < 0)
      continue;
    uint64_t at = y->plt + (uint64_t)l->plt[i] * PLT_STUB;
    int64_t disp = (int64_t)(y->got + (uint64_t)l->got[i] * 8) - (int64_t)(at + 6);
    int32_t d32 = (int32_t)disp;
    b[at] = 0xff;
    b[at + 1] = 0x25;
    memcpy(b + at + 2, &d32, 4);
    memset(b + at + 6, 0xcc, PLT_STUB - 6);
  }
  for (int k = 0; k < l->nsec; k++) {
    const Elf64_Shdr *rs = l->secs[k].sh;
    InSec *t = reloc_target(l, rs);
    if (!t)
      continue;
    const Elf64_Rela *r = (const Elf64_Rela *)(l->obj + rs->sh_offset);
    size_t nr = rs->sh_size / sizeof *r;
    for (size_t j = 0; j < nr; j++) {
      uint32_t type = ELF64_R_TYPE(r[j].r_info);
      int si = (int)ELF64_R_SYM(r[j].r_info);
      if (type == R_X86_64_NONE)
        continue;
      int width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
      if (r[j].r_offset > t->sh->sh_size || t->sh->sh_size - r[j].r_offset < (uint64_t)width)
        return fail(l, "relocation at %#llx outside %s",
                    (unsigned long long)r[j].r_offset, t->name);
      uint64_t p = t->addr + r[j].r_offset;
      /* in 64-bit two's complement, whatever addend a (corrupted) object
       * holds; the range checks below decide */
      uint64_t s = sym_addr(l, y, si), a = (uint64_t)r[j].r_addend;
      int64_t v;
      switch (type) {
      case R_X86_64_PC32: case R_X86_64_PLT32: case R_X86_64_PC64:
        v = (int64_t)(s + a - p);
        break;
      case R_X86_64_GOTPCREL: case R_X86_64_GOTPCRELX: case R_X86_64_REX_GOTPCRELX:
        v = (int64_t)(y->got + (uint64_t)l->got[si] * 8 + a - p);
        break;
      default: /* R_X86_64_64, planned as a dynamic relocation */
        v = (int64_t)(s + a);
        if (is_undefined(l, si) && !is_got_base(l, si))
          put_rela(b, &rat, p, (uint32_t)l->dyn[si], R_X86_64_64, (int64_t)a);
        else
          put_rela(b, &rat, p, 0, R_X86_64_RELATIVE, v);
        break;
      }
      if (width == 4) {
        if (!fits32(v))
          return fail(l, "relocation at %#llx in %s out of range",
                      (unsigned long long)r[j].r_offset, t->name);
        int32_t v32 = (int32_t)v;
        memcpy(b + p, &v32, 4);
      } else {
        memcpy(b + p, &v, 8);
      }
    }
  }
  return true;
}

/* .hash, .dynsym, .dynstr and .dynamic. */
static void write_dynamic(Link *l, const Layout *y, unsigned char *b) {
  uint32_t nbucket = (uint32_t)l->ndyn;
  uint32_t *hash = (uint32_t *)(b + y->hash);
  uint32_t *bucket = hash + 2, *chain = bucket + nbucket;
  hash[0] = nbucket;
  hash[1] = (uint32_t)l->ndyn;
  char *str = (char *)b + y->dynstr;
  size_t so = 1;
  uint64_t needed_at[ARRAY_LEN(needed)];
  for (size_t k = 0; k < ARRAY_LEN(needed); k++) {
    needed_at[k] = so;
    memcpy(str + so, needed[k], strlen(needed[k]) + 1);
    so += strlen(needed[k]) + 1;
  }
  Elf64_Sym *ds = (Elf64_Sym *)(b + y->dynsym);
  for (int i = 0; i < l->nsym; i++) {
    int d = l->dyn[i];
    if (!d)
      continue;
    const Elf64_Sym *s = &l->syms[i];
    const char *nm = sym_name(l, i);
    ds[d].st_name = (uint32_t)so;
    memcpy(str + so, nm, strlen(nm) + 1);
    so += strlen(nm) + 1;
    ds[d].st_info = s->st_info;
    ds[d].st_other = s->st_other;
    if (s->st_shndx == SHN_UNDEF) {
      ds[d].st_shndx = SHN_UNDEF;
    } else {
      ds[d].st_shndx = s->st_shndx == SHN_ABS ? SHN_ABS
                                               : (uint16_t)l->secs[s->st_shndx].out_index;
      ds[d].st_value = sym_addr(l, y, i);
      ds[d].st_size = s->st_size;
    }
    uint32_t h = elf_hash(nm) % nbucket;
    chain[d] = bucket[h];
    bucket[h] = (uint32_t)d;
  }
  Elf64_Dyn *dyn = (Elf64_Dyn *)(b + y->dynamic);
  size_t n = 0;
  for (size_t k = 0; k < ARRAY_LEN(needed); k++)
    dyn[n++] = (Elf64_Dyn){DT_NEEDED, {needed_at[k]}};
  dyn[n++] = (Elf64_Dyn){DT_HASH, {y->hash}};
  dyn[n++] = (Elf64_Dyn){DT_STRTAB, {y->dynstr}};
  dyn[n++] = (Elf64_Dyn){DT_SYMTAB, {y->dynsym}};
  dyn[n++] = (Elf64_Dyn){DT_STRSZ, {y->dynstr_size}};
  dyn[n++] = (Elf64_Dyn){DT_SYMENT, {sizeof(Elf64_Sym)}};
  if (l->nreloc_dyn) {
    dyn[n++] = (Elf64_Dyn){DT_RELA, {y->rela}};
    dyn[n++] = (Elf64_Dyn){DT_RELASZ, {(uint64_t)l->nreloc_dyn * sizeof(Elf64_Rela)}};
    dyn[n++] = (Elf64_Dyn){DT_RELAENT, {sizeof(Elf64_Rela)}};
  }
  dyn[n++] = (Elf64_Dyn){DT_NULL, {0}};
}

typedef struct {
  Elf64_Shdr *sh;
  int n;
  char *names;
  size_t names_len;
} ShdrOut;

static int add_shdr(ShdrOut *o, const char *name, Elf64_Shdr h) {
  size_t len = strlen(name) + 1;
  h.sh_name = (uint32_t)o->names_len;
  memcpy(o->names + o->names_len, name, len);
  o->names_len += len;
  o->sh[o->n] = h;
  return o->n++;
}

/* Section headers: not needed to load, but readelf, objdump, gdb and perf
 * read them. Numbers the kept input sections (out_index) as it goes. */
static void build_shdrs(Link *l, const Layout *y, ShdrOut *o) {
  size_t cap = 16;
  for (int k = 0; k < l->nsec; k++)
    cap += strlen(l->secs[k].name) + 1;
  o->sh = xcalloc((size_t)l->nsec + 12, sizeof *o->sh);
  o->names = xcalloc(cap + 128, 1);
  o->names_len = 1;
  o->n = 1;
  int dynsym_ix = 2, dynstr_ix = 3; /* fixed by the order below */
  add_shdr(o, ".hash", (Elf64_Shdr){0, SHT_HASH, SHF_ALLOC, y->hash, y->hash,
                                    (2 + 2 * (uint64_t)l->ndyn) * 4, (uint32_t)dynsym_ix,
                                    0, 8, 4});
  add_shdr(o, ".dynsym", (Elf64_Shdr){0, SHT_DYNSYM, SHF_ALLOC, y->dynsym, y->dynsym,
                                      (uint64_t)l->ndyn * sizeof(Elf64_Sym),
                                      (uint32_t)dynstr_ix, 1, 8, sizeof(Elf64_Sym)});
  add_shdr(o, ".dynstr", (Elf64_Shdr){0, SHT_STRTAB, SHF_ALLOC, y->dynstr, y->dynstr,
                                      y->dynstr_size, 0, 0, 1, 0});
  if (l->nreloc_dyn)
    add_shdr(o, ".rela.dyn", (Elf64_Shdr){0, SHT_RELA, SHF_ALLOC, y->rela, y->rela,
                                          (uint64_t)l->nreloc_dyn * sizeof(Elf64_Rela),
                                          (uint32_t)dynsym_ix, 0, 8, sizeof(Elf64_Rela)});
  static const int order[] = {SEG_RO, SEG_RX, SEG_RW};
  for (size_t g = 0; g < ARRAY_LEN(order); g++) {
    if (order[g] == SEG_RW) {
      add_shdr(o, ".dynamic", (Elf64_Shdr){0, SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE,
                                           y->dynamic, y->dynamic,
                                           y->ndynamic * sizeof(Elf64_Dyn),
                                           (uint32_t)dynstr_ix, 0, 8, sizeof(Elf64_Dyn)});
      if (l->ngot)
        add_shdr(o, ".got", (Elf64_Shdr){0, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, y->got,
                                         y->got, (uint64_t)l->ngot * 8, 0, 0, 8, 8});
    }
    for (int k = 0; k < l->nsec; k++) {
      InSec *s = &l->secs[k];
      if (s->seg != order[g])
        continue;
      Elf64_Shdr h = *s->sh;
      h.sh_type = SHT_PROGBITS; /* .bss is written out as zeros */
      h.sh_addr = h.sh_offset = s->addr;
      h.sh_link = h.sh_info = 0;
      h.sh_flags &= SHF_ALLOC | SHF_WRITE | SHF_EXECINSTR | SHF_MERGE | SHF_STRINGS;
      s->out_index = add_shdr(o, s->name, h);
    }
    if (order[g] == SEG_RX && l->nplt)
      add_shdr(o, ".plt", (Elf64_Shdr){0, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, y->plt,
                                       y->plt, (uint64_t)l->nplt * PLT_STUB, 0, 0, 16,
                                       PLT_STUB});
  }
  add_shdr(o, ".shstrtab", (Elf64_Shdr){0, SHT_STRTAB, 0, 0, y->shstr, 0, 0, 0, 1, 0});
  o->sh[o->n - 1].sh_size = o->names_len;
}

static void write_headers(const Layout *y, const ShdrOut *o, unsigned char *b) {
  Elf64_Ehdr eh = {0};
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof eh;
  eh.e_shoff = y->shdr;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 5;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = (uint16_t)o->n;
  eh.e_shstrndx = (uint16_t)(o->n - 1);
  memcpy(b, &eh, sizeof eh);
  Elf64_Phdr ph[5] = {
    {PT_LOAD, PF_R, 0, 0, 0, y->ro_end, y->ro_end, PAGE},
    {PT_LOAD, PF_R | PF_X, y->rx_start, y->rx_start, y->rx_start,
     y->rx_end - y->rx_start, y->rx_end - y->rx_start, PAGE},
    {PT_LOAD, PF_R | PF_W, y->rw_start, y->rw_start, y->rw_start,
     y->rw_end - y->rw_start, y->rw_end - y->rw_start, PAGE},
    {PT_DYNAMIC, PF_R | PF_W, y->dynamic, y->dynamic, y->dynamic,
     y->ndynamic * sizeof(Elf64_Dyn), y->ndynamic * sizeof(Elf64_Dyn), 8},
    {PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 0, 16},
  };
  memcpy(b + sizeof eh, ph, sizeof ph);
}

static bool check_header(Link *l) {
  const unsigned char *p = l->obj;
  if (l->n < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0)
    return fail(l, "not an ELF file");
  l->eh = (const Elf64_Ehdr *)p;
  if (p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB ||
      l->eh->e_type != ET_REL || l->eh->e_machine != EM_X86_64)
    return fail(l, "not an x86-64 ELF64 relocatable object");
  return true;
}

bool host_link_so(const void *obj, size_t n, unsigned char **out,
                  size_t *outlen, char *why, size_t whylen) {
  Link l = {.obj = obj, .n = n, .why = why, .whylen = whylen};
  if (whylen)
    why[0] = 0;
  unsigned char *b = NULL;
  ShdrOut o = {0};
  bool ok = ((uintptr_t)obj % 8 == 0 || fail(&l, "object buffer not 8-byte aligned")) &&
            check_header(&l) && read_sections(&l) && pick_dynamic_symbols(&l) &&
            plan_relocations(&l);
  Layout y = {0};
  if (ok) {
    lay_out(&l, &y);
    build_shdrs(&l, &y, &o);
    y.shdr = align_up(y.shstr + o.names_len, 8);
    y.total = y.shdr + (uint64_t)o.n * sizeof(Elf64_Shdr);
    o.sh[o.n - 1].sh_offset = y.shstr;
    b = xcalloc(y.total, 1);
    for (int k = 0; k < l.nsec; k++) {
      InSec *s = &l.secs[k];
      if (s->seg != SEG_NONE && s->sh->sh_type != SHT_NOBITS)
        memcpy(b + s->addr, l.obj + s->sh->sh_offset, s->sh->sh_size);
    }
    write_dynamic(&l, &y, b);
    ok = apply_relocations(&l, &y, b);
  }
  if (ok) {
    write_headers(&y, &o, b);
    memcpy(b + y.shstr, o.names, o.names_len);
    memcpy(b + y.shdr, o.sh, (size_t)o.n * sizeof(Elf64_Shdr));
    *out = b;
    *outlen = y.total;
    b = NULL;
  }
  free(b);
  free(o.sh);
  free(o.names);
  free(l.secs);
  free(l.got);
  free(l.plt);
  free(l.dyn);
  return ok;
}

bool host_link_empty_so(unsigned char **out, size_t *outlen, char *why, size_t whylen) {
  /* the object: header, .shstrtab, .strtab, .symtab (the null symbol),
   * then the four section headers (null, .shstrtab, .symtab, .strtab) */
  static const char names[] = "\0.shstrtab\0.symtab\0.strtab";
  enum { NAMES = sizeof(Elf64_Ehdr), STRS = NAMES + sizeof names,
         SYMS = (STRS + 1 + 7) / 8 * 8, SHDRS = SYMS + sizeof(Elf64_Sym),
         TOTAL = SHDRS + 4 * sizeof(Elf64_Shdr) };
  uint64_t words[(TOTAL + 7) / 8] = {0};     /* 8-byte aligned */
  unsigned char *obj = (unsigned char *)words;
  Elf64_Ehdr eh = {.e_type = ET_REL, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
                   .e_shoff = SHDRS, .e_ehsize = sizeof(Elf64_Ehdr),
                   .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4, .e_shstrndx = 1};
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  memcpy(obj, &eh, sizeof eh);
  memcpy(obj + NAMES, names, sizeof names);
  Elf64_Shdr sh[4] = {
      {0},
      {.sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = NAMES, .sh_size = sizeof names,
       .sh_addralign = 1},
      {.sh_name = 11, .sh_type = SHT_SYMTAB, .sh_offset = SYMS, .sh_size = sizeof(Elf64_Sym),
       .sh_link = 3, .sh_info = 1, .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym)},
      {.sh_name = 19, .sh_type = SHT_STRTAB, .sh_offset = STRS, .sh_size = 1,
       .sh_addralign = 1},
  };
  memcpy(obj + SHDRS, sh, sizeof sh);
  return host_link_so(obj, TOTAL, out, outlen, why, whylen);
}
