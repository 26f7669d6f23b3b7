/*
 * spmd.h - what the SPMD passes share: sharding-propagation
 * (sharding_propagation.c) gives every instruction of a global program a
 * sharding, spmd-partitioning (spmd_partitioner.c) turns the program into
 * the one every partition runs, with collectives where shards must meet.
 *
 * Both work on tilings (lib/hlo/tiling.c: every device's tile index along
 * each dimension), which makes the questions they ask (do two operands put
 * the same rows on the same device? which devices hold the other tiles of
 * mine?) comparisons of small integer arrays.
 *
 * Sectioned by the file that implements each part.
 */
#ifndef XHLOC_PASSES_SPMD_H
#define XHLOC_PASSES_SPMD_H

#include "passes.h"

#include "../lib/hlo/ir_edit.h"

/*
 * spmd_tiling.c: values' shardings and the operations on tilings.
 */

/* A value's sharding: a tiling for an array (or token), one per element for
 * a tuple. */
typedef struct Shd Shd;
struct Shd {
  Tiling *t;                      /* arrays and tokens */
  int n;                          /* tuples: n elements in el */
  Shd **el;
};

Shd *shd_array(Arena *a, Tiling *t);
Shd *shd_tuple(Arena *a, int n, Shd **el);
/* Every leaf of a value of shape s replicated (manual) on ndev devices. */
Shd *shd_replicated(Arena *a, const Shape *s, int64_t ndev);
Shd *shd_manual(Arena *a, const Shape *s, int64_t ndev);
/* The sharding attribute for a value of shape s (a single sharding on a
 * tuple applies to every element); false with the reason in why. */
bool shd_from_sharding(Arena *a, const Sharding *sh, const Shape *s,
                       int64_t ndev, Shd **out, char *why, size_t nwhy);
Sharding *shd_to_sharding(Arena *a, const Shd *s);
bool shd_equal(const Shd *a, const Shd *b);
/* Some leaf is manual. */
bool shd_any_manual(const Shd *s);

/* t with dimension k untiled (its devices hold copies along k). */
Tiling *tiling_drop(Arena *a, const Tiling *t, int k);
/* A tiling of `rank` dimensions whose dimension j is dimension dim[j] of
 * srcs[which[j]] for every device (which[j] < 0: untiled).  NULL when the
 * devices do not then hold every tile equally often. */
Tiling *tiling_merge(Arena *a, int rank, int64_t ndev,
                     const Tiling *const *srcs, const int *which,
                     const int *dim);
/* Dimension j of the result is dimension src_dim[j] of t (-1: untiled). */
Tiling *tiling_project(Arena *a, const Tiling *t, int rank,
                       const int *src_dim);
/* Number of tiled dimensions, and of tiles in all. */
int tiling_tiled_dims(const Tiling *t);
/* A reshape from `from` (tiled by t) to `to`, group by group of
 * dimensions whose sizes multiply alike: a group's tiles, read as one
 * index over the group flattened (major dimensions cut into single
 * elements, then one cut evenly), are spread the same way over the
 * result's dimensions of the group ([8] in 4 tiles -> [2,4] in 2x2).  The
 * result's tiling in *out; *src_eff is t with the dimensions that cannot
 * be kept untiled. */
void tiling_reshape(Arena *a, const Tiling *t, const Shape *from,
                    const Shape *to, Tiling **out, Tiling **src_eff);
/* What moving a value of shape `global` from tiling `from` to `to` costs:
 * 0 when every device's new shard lies within its old one (a slice),
 * otherwise the bytes each device receives on the way (spmd_reshard's
 * all-to-alls and all-gathers). */
int64_t tiling_reshard_cost(const Tiling *from, const Tiling *to,
                            const Shape *global);
/* A dimension j that an all-to-all among the devices along dimension k of
 * cur can tile as `to` does (cur untiled there, `to` tiled as cur is along
 * k, the length dividing): -1 when none. */
int tiling_a2a_dim(const Tiling *cur, const Tiling *to, int k,
                   const Shape *global);
/* When `to` cuts the tiles `from` does (the same grid) but puts them on
 * other devices: src[d] is a device holding d's new tile under `from` (d
 * itself where it holds it), no device a source twice; false when not
 * (equal tilings included). */
bool tiling_permutation(const Tiling *from, const Tiling *to, int64_t *src);
/* Along dimension k (of length g), every device's shard under `to` lies
 * within its shard under `from` (ignoring padding). */
bool tiling_contained(const Tiling *from, const Tiling *to, int k, int64_t g);
/* Devices grouped for a collective along the dimensions marked in vary:
 * the devices in a group hold the same tile in every other dimension
 * (copies are paired off by their order), and differ in the varying ones,
 * ordered row-major by their tile indices there.  Returns the number of
 * groups; each group has size members in (*groups)[g * size ...] (heap).
 * 0 when the varying dimensions have one tile. */
int tiling_groups(const Tiling *t, const bool *vary, int64_t **groups,
                  int *size);

/*
 * spmd_sdy.c: Shardy's attributes (xla.sdy.*), as JAX writes them.
 */
typedef struct SdyMeshes SdyMeshes;
/* The module's meshes (frontend attribute xla.sdy.meshes); NULL with an
 * error in d when it cannot be read, an empty set when there is none. */
SdyMeshes *sdy_meshes(Arena *a, const HloModule *m, Diag *d);
/* The value of i's frontend attribute key, or NULL. */
const char *sdy_attr(const HloInstr *i, const char *key);
/* #sdy.sharding<@mesh, [{"x"}, {}]> for an array of this rank as a
 * tiling on ndev devices; false with the reason in why. */
bool sdy_tiling(Arena *a, const SdyMeshes *ms, const char *text, int rank,
                int64_t ndev, Tiling **out, char *why, size_t nwhy);
/* #sdy.sharding_per_value<[<@mesh, [...]>, ...]>: value k of n for a
 * value of shape s (arrays only). */
bool sdy_tiling_per_value(Arena *a, const SdyMeshes *ms, const char *text,
                          int k, const Shape *s, int64_t ndev, Tiling **out,
                          char *why, size_t nwhy);
/* #sdy<manual_axes{"x"}>: readable, and naming axes of the module's
 * meshes (all of a mesh's, or some: a partly manual shard_map); false with
 * the reason when not. */
bool sdy_manual_axes_valid(const SdyMeshes *ms, const char *text, char *why,
                           size_t nwhy);

/*
 * spmd_rules.c: how shardings pass through an instruction.
 */
typedef enum SpmdRole {
  SPMD_ROLE_NONE,                 /* anything else: computed replicated */
  SPMD_ROLE_SHARDING,             /* Sharding, xla.sdy.FuncResultSharding */
  SPMD_ROLE_TO_MANUAL,            /* SPMDFullToShardShape,
                                     xla.sdy.GlobalToLocalShape */
  SPMD_ROLE_FROM_MANUAL,          /* SPMDShardToFullShape,
                                     xla.sdy.LocalToGlobalShape */
} SpmdRole;
SpmdRole spmd_role(const HloInstr *i);
/* The module asks for partitioning: several partitions, and a sharding, a
 * Shardy attribute or a sharding custom-call somewhere; not scheduled
 * (is_scheduled=true: partitioned already, as XLA's optimized dumps are). */
bool spmd_wanted(const HloModule *m);
/* The module is the output of spmd-partitioning already. */
bool spmd_done(const HloModule *m);

/* Forward: the tiling i's result would have from its operands' (NULL where
 * unknown); NULL when nothing follows. */
Tiling *spmd_forward(Arena *a, const HloInstr *i, Tiling *const *ops,
                     int64_t ndev);
/* The tiling closest to `out` that i computed on every device's shards
 * gives exactly (dimensions the op cannot keep tiled untiled); NULL when i
 * has no such rule (it is computed replicated). */
Tiling *spmd_exact(Arena *a, const HloInstr *i, const Tiling *out);
/* Backward: the tiling operand k of i would best have when i's result is
 * tiled by out; NULL when nothing follows. */
Tiling *spmd_backward(Arena *a, const HloInstr *i, int k, const Tiling *out,
                      int64_t ndev);

/* The dimensions of a dot or convolution as one space: batch (both
 * operands and the result), lhs-only, rhs-only (both with the result) and
 * contracting (both operands).  Spatial dimensions of a convolution are in
 * none.  For each space dimension, the lhs, rhs and result dimension (-1:
 * none); `pinned` marks those that must stay untiled (feature groups). */
typedef struct DotSpace {
  int rank;
  int lhs[64], rhs[64], out[64];
  bool contracting[64], pinned[64];
} DotSpace;
bool dot_space(const HloInstr *i, DotSpace *s);
/* The space tiling to compute a dot by: the cheapest of those made from
 * the operands' tilings (and from `out`, the result's, when not NULL),
 * counting the reshards of the operands, the reduction and (with out) the
 * reshard of the result. */
Tiling *dot_choose(Arena *a, const DotSpace *s, const HloInstr *i,
                   const Tiling *lhs, const Tiling *rhs, const Tiling *out,
                   int64_t ndev);
/* The tiling of operand/result `which` (0 lhs, 1 rhs, 2 result) of rank
 * rank under space tiling st. */
Tiling *dot_project(Arena *a, const DotSpace *s, const Tiling *st, int which,
                    int rank);

/*
 * spmd_reshard.c: building the per-device program: partition-dependent
 * offsets, collectives, moving a value from one tiling to another.
 */
typedef struct Spmd {
  IrEdit *e;
  HloModule *m;
  HloComp *c;                     /* where new instructions go */
  Arena *a;                       /* scratch */
  int64_t ndev;
  HloInstr *pid;                  /* s32[] partition-id, made on first use */
  int64_t channel;                /* the last channel_id handed out */
  Diag *d;
} Spmd;

/* An s32[] whose value on device d is v[d] (a constant when all agree;
 * else a table indexed by partition-id). */
HloInstr *spmd_per_device(Spmd *s, const int64_t *v);
/* v (tiled by t) with the padding past `global` elements along dimension
 * k replaced by fill (a scalar; NULL: zero): for reductions over padded
 * shards. */
HloInstr *spmd_mask(Spmd *s, HloInstr *v, const Tiling *t, int k,
                    int64_t global, HloInstr *fill);
/* An all-reduce of v over the groups (ngroups of size devices) with the
 * scalar computation fn. */
HloInstr *spmd_all_reduce(Spmd *s, HloInstr *v, int ngroups, int size,
                          const int64_t *groups, HloComp *fn);
/* A reduce-scatter of v along dimension dim over the groups: member m of
 * a group keeps piece m of the sum. */
HloInstr *spmd_reduce_scatter(Spmd *s, HloInstr *v, int dim, int ngroups,
                              int size, const int64_t *groups, HloComp *fn);
/* The value v of global shape `global`, tiled by from, tiled by to: a
 * collective-permute when `to` only moves the tiles to other devices, else
 * all-gathers along the dimensions whose shards do not nest, then one
 * dynamic-slice.  NULL with an error in s->d when it cannot be done (a
 * manual value to a tiled one). */
HloInstr *spmd_reshard(Spmd *s, HloInstr *v, const Tiling *from,
                       const Tiling *to, const Shape *global);
/* The same for a value of any shape, leaf by leaf. */
HloInstr *spmd_reshard_shd(Spmd *s, HloInstr *v, const Shd *from,
                           const Shd *to, const Shape *global);
/* A scalar computation of type et reducing with op. */
HloComp *spmd_reducer(Spmd *s, HloOp op, ElemType et);

#endif
