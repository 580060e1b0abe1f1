/*
 * percpu.h - the cpu layer's per-CPU mode: per-CPU sheaves changed only
 * inside restartable sequences (rseq), and their inline fast paths.
 *
 * The design (after tcmalloc's per-CPU caches, with the kernel's sheaves)
 * ------------------------------------------------------------------------
 * Each cache that uses them (s->pcpu_cap != 0: SLUB and SLAB) has, once it
 * is past slow start, an array of one 512-byte entry per possible CPU
 * (s->pcpu; before that it points at pcpu_none, whose entries have cap 0).
 * An entry is a sheaf: a LIFO array of free objects of the cache.  Every
 * allocation pops the current CPU's sheaf and every free pushes onto it:
 * no lock, no atomic read-modify-write, no per-thread state.  A thread that
 * exits leaves nothing behind, and 1000 threads share two sheaves per cache
 * on a 2-CPU machine.
 *
 * Abort and restart rules (documented beside the code, as rseq requires)
 * -----------------------------------------------------------------------
 *  1. Each critical section first stores its descriptor's address in the
 *     thread's rseq_cs (label 0, outside the section), then reads cpu_id
 *     inside the section (label 1) and indexes the entry with it (a
 *     thread whose rseq kslab registers itself reads KSLAB_RSEQ_IDLE_CPU until
 *     it is registered: that entry is cap 0 in every array, so the
 *     section misses, rule 4; prim.h, percpu.c's arrays).  If the
 *     thread is preempted, migrated or signalled before the commit, the
 *     kernel moves it to the abort handler (label 4, after the 4-byte
 *     signature glibc registered, 0x53053053), which jumps back to label 0:
 *     the whole section runs again from scratch on whatever CPU it is now.
 *  2. The commit is one 8-byte store of the entry's first word, the last
 *     instruction of the section (label 2 follows it).  Before it, a section
 *     only reads, or writes where nobody looks (array slots above the count,
 *     the caller's own buffer), so running it twice is harmless.  Never
 *     shift or overwrite live slots before the commit: an abort after such
 *     a write would leave the array corrupted.
 *  3. The count and the event counter share the commit word (count in the
 *     low 16 bits, fast allocations above), so the count and the counter
 *     change together: stats stay exact however often sections abort.
 *  4. cap == 0 makes every section miss (pop: count - 1 >= cap; push:
 *     count >= cap).  A drainer (shrink) stores cap = 0, then fences the
 *     CPU (membarrier RSEQ): sections in flight there restart and miss, so
 *     after the fence it owns the entry until it stores cap back.
 *  5. Never call out of, or fault inside, a section: the sections read and
 *     write only the entry and the caller's buffer.
 *  6. The validated-slab hint.  A freed pointer must be checked (a live slab
 *     of this cache, an object's start) before it may enter a sheaf; the
 *     full check reads the slab's page descriptor.  Each entry remembers the
 *     last slab the check passed on this CPU: hint_start (its first object)
 *     and hint_gen (s->pcpu_gen when the check began; every slab the cache
 *     gives back to the page allocator bumps it first).  A free whose x is
 *     an object start of that slab while s->pcpu_gen still equals hint_gen
 *     needs nothing else: the slab cannot have left the cache.  The hint is
 *     written inside a push section before its commit, hint_start first and
 *     then hint_gen: an abort between the two leaves a new start with the
 *     old generation, which is still sound, since the new start was checked
 *     at a generation no older than that.  What the hint skips is the
 *     slab-freelist double-free test; the free tag (rule 8) stays.
 *  7. No guess for kfree.  kfree finds x's cache in kfree's map (its
 *     cache and its slab's colour, one load), then pushes.  kslab used to
 *     keep, per thread, a guess of the next kfree's cache (the slab of
 *     its last run of looked-up kfrees, armed after 4 in a row) and tried
 *     rule 6's hinted push on it first.  Measured once the map had made
 *     the lookup cheap (rdtsc, cycles a free+malloc step, one thread,
 *     min of 7-9 interleaved runs, with the guess -> without): random
 *     sizes 8-1000 B, 2048 live 24.6 -> 23.3; 64 B, 2048 live 20.7 -> 15.9
 *     (two slabs: the guess armed and missed at random); 64 B, 8192 live
 *     18.9 -> 17.8; one live 32 B 14.4 -> 14.4; 16 or 256 live (one slab)
 *     14.3 -> 14.7-14.9; kmalloc+kfree batches of 100 in order 27.8 ->
 *     25.2.  So it went: keeping it cost every looked-up free 14
 *     instructions, and it saved a hinted push only where a few live
 *     objects share one slab.
 *
 *  8. The free tag: what stops a double free, however far back and on
 *     whichever CPU, and a write into a free object.  Every push writes
 *     kslab_tag_key at x + s->offset (the word a free object may lose:
 *     SLUB's free pointer word, outside the object when a constructor or
 *     SLAB_TYPESAFE_BY_RCU keeps its contents), and the back-ends' refills
 *     write it on what they take from slabs, so every object in a sheaf,
 *     the barn or SLAB's shared array carries it.  Where an object leaves
 *     them the tag is checked and consumed (pcpu_tag_claim):
 *     by every pop, and by every drain to the slabs (SLUB's, before its
 *     link goes into the word; SLAB's free_block).  An object freed
 *     twice sits there twice: whichever copy leaves first consumes the
 *     tag, and the other is reported as it leaves -- before it can be
 *     handed out to a second owner; a write into a free object's tag word
 *     (an overflow from the object before it, a forged link written after
 *     free) is reported the same way.  The push only stores the tag: it
 *     never reads the object, whose line a program freeing an old object
 *     no longer holds (a test there cost the server rows a third of their
 *     throughput: every free waited for a cache miss; a store waits for
 *     nothing).  The hinted push writes it inside its section, after the
 *     hint has proved x an object of a live slab, before the commit; the
 *     other pushes write it in C before their section (x validated and the
 *     caller's).  A tag written by a push that then misses or aborts is
 *     harmless: x is still the freer's, and wherever it goes next expects
 *     the tag.  Never write it after a commit: a pop of x on this CPU could
 *     have handed x out meanwhile.  The sheaf-top compare stays, so the
 *     commonest double free (free a, free a) is reported at the second
 *     free itself.
 *  9. kfree's map names the array, not the cache.  Once s has its sheaf
 *     array, the map word of each of its slabs' pages (pages.c, map_write)
 *     holds the array's address: alone, plus 1 (PMAP_BASE), where the
 *     slab's colour and the cache's tag offset are 0 -- every SLUB slab of
 *     a cache without constructor or RCU -- else with the colour
 *     (PMAP_BASE_COL); the array's header line, just before it (struct
 *     pcpu_hdr), holds s, and each CPU's entry a copy of what validating x
 *     needs, tested inside the push's section (pcpu_kfree_push0,
 *     pcpu_kfree_push).  So kfree goes from the map
 *     word to the CPU's sheaf with no load between, and reads one line of
 *     the array besides the slots (the map word of the cache cost a
 *     load of the cache's line, then of s->pcpu, before the section could
 *     start: rdtsc, random sizes 8-1000 B, 2048 live, one thread, 43.5 ->
 *     39.8 cycles a free+malloc step).  A slab published before s had its
 *     array keeps words naming s until the first kfree into it, which
 *     rewrites them (pages_map_upgrade) before its push, while x is still
 *     the caller's, under pages_lock, which pages_free holds while it
 *     clears a slab's words: no word outlives its slab.  An
 *     array is reused by another cache only if s had no objects left when
 *     it was destroyed (a leaked slab's words still name it); otherwise
 *     its caps stay 0 and its header names the dead cache, whose checks
 *     report.  malloc's small classes likewise keep each class's array in
 *     a table (kmalloc.c), and their free tag is at offset 0.
 * 10. The inline paths write and claim the tag at offset 0.
 *     kmem_cache_alloc's pop and kmem_cache_free's hinted push reach the
 *     array through s->pcpu_tag0, which is s->pcpu where the tag is at
 *     offset 0 and pcpu_none (cap 0: every pop and push misses) where it
 *     is not -- a constructor, SLAB_TYPESAFE_BY_RCU or a free pointer
 *     offset keep it after the object or inside it.  Their misses try
 *     the same section on s->pcpu with the tag at s->offset, out of line
 *     (kmalloc.c: cache_alloc_miss, kmem_cache_free_miss), before the
 *     slow paths.  So the inline paths load neither s->offset nor an
 *     index for the tag's address: measured (rdtsc, fastest chunk), a
 *     plain cache's pair 1.074 -> 1.027 of the build without the tag, at
 *     the price of a missed section and a call on each side of those
 *     other caches' pairs (9.2 -> 13.3 cycles; README).

 * What a miss does is in percpu.c.  Events: fast allocations are counted in
 * the commit word; objects the slow paths put in or took out are summed
 * (atomically, after their commit) in slow_net, so fast frees are
 * allocations + count - slow_net.
 */
#ifndef KSLAB_PERCPU_H
#define KSLAB_PERCPU_H
#include "slab_common.h"

#define PCPU_SHIFT 9
#define PCPU_STRIDE (1u << PCPU_SHIFT)
/* The entry's layout, which the asm spells with these offsets. */
#define PCPU_TOFF_OFF 8
#define PCPU_HINT_OFF 16
#define PCPU_GEN_OFF 24
#define PCPU_CAP_OFF 32
#define PCPU_GSHIFT_OFF 36
#define PCPU_OFFMASK_OFF 40
#define PCPU_INV_OFF 48
#define PCPU_NOBJ_OFF 56
#define PCPU_OBJS_OFF 64
#define PCPU_TOP_OFF (PCPU_OBJS_OFF - 8)    /* objs[count - 1] is TOP(e, count, 8) */
#define PCPU_TOP2_OFF (PCPU_OBJS_OFF - 16)  /* objs[count - 2] */
/* the slots, between the first line and slow_net at the entry's end */
#define PCPU_CAP_MAX ((PCPU_STRIDE - PCPU_OBJS_OFF - 8) / sizeof(void *))   /* 55 */
#define PCPU_MAX_CPUS 1024          /* more possible CPUs: the per-thread mode */
#define PCPU_COUNT_MASK 0xffffull
#define PCPU_ALLOC_ONE (1ull << 16)
#define PCPU_STR_(x) #x
#define PCPU_STR(x) PCPU_STR_(x)

/* An entry's first line is everything a push or a pop reads besides the
 * slots: the commit word, the cap, the hint (rule 6), and a copy of what
 * kfree needs of the cache to validate x (rule 9) -- per CPU, so that
 * kfree reads one line of the entry where it read the array's header line
 * too (rdtsc, random sizes 8-1000 B, 2048 live, one thread: measured in
 * README).  Below objs[0] (a push's objs[count - 1] when count is 0) is
 * objects, and below that inv (odd): never an object's address. */
struct pcpu_sheaf {
    uint64_t word;          /* commit word: count | fast allocations << 16 */
    /* obj_index's constants and the tag's offset (rule 9), copied from the
     * cache when the array is created, in the forms the free's test uses
     * with no instruction to convert them: s->offset widened (an index
     * register as loaded), ~s->slab_mask (x's offset in its slab is one
     * and), s->inv, s->objects widened (a compare with memory) */
    uint64_t toff;
    /* The validated-slab hint (rule 6): the first object of a slab of the
     * cache found live when s->pcpu_gen was hint_gen. */
    uintptr_t hint_start;
    uint64_t hint_gen;
    uint32_t cap;           /* objects it may hold; 0: draining, or no sheaves yet */
    uint32_t gshift;        /* s->shift */
    uintptr_t off_mask;
    uint64_t inv;
    uint64_t nobj;
    void *objs[PCPU_CAP_MAX];
    int64_t slow_net;       /* atomic: objects slow paths put in minus took out */
};
_Static_assert(sizeof(struct pcpu_sheaf) <= PCPU_STRIDE, "an entry fits its stride");
_Static_assert(offsetof(struct pcpu_sheaf, toff) == PCPU_TOFF_OFF &&
               offsetof(struct pcpu_sheaf, hint_start) == PCPU_HINT_OFF &&
               offsetof(struct pcpu_sheaf, hint_gen) == PCPU_GEN_OFF &&
               offsetof(struct pcpu_sheaf, cap) == PCPU_CAP_OFF &&
               offsetof(struct pcpu_sheaf, gshift) == PCPU_GSHIFT_OFF &&
               offsetof(struct pcpu_sheaf, off_mask) == PCPU_OFFMASK_OFF &&
               offsetof(struct pcpu_sheaf, inv) == PCPU_INV_OFF &&
               offsetof(struct pcpu_sheaf, nobj) == PCPU_NOBJ_OFF &&
               offsetof(struct pcpu_sheaf, objs) == PCPU_OBJS_OFF, "the asm knows the layout");

/* CPU cpu's entry of the array at base */
static inline struct pcpu_sheaf *pcpu_entry(struct pcpu_sheaf *base, unsigned cpu)
{
    return (struct pcpu_sheaf *)((char *)base + ((size_t)cpu << PCPU_SHIFT));
}

/* The line before each sheaf array (percpu.c carves one in front of every
 * array): the cache whose array it is, for the reports and the slow path
 * of a kfree that found the array in kfree's map (rule 9). */
struct pcpu_hdr {
    struct kmem_cache *s;
    uintptr_t pad[7];
};
_Static_assert(sizeof(struct pcpu_hdr) == 64, "the header is one line");
static inline const struct pcpu_hdr *pcpu_hdr_of(const struct pcpu_sheaf *base)
{
    return (const struct pcpu_hdr *)base - 1;
}

/* The mode, chosen once by kslab_init (KSLAB_PERCPU, rseq available): the
 * offset of the thread's struct rseq from the thread pointer (glibc's,
 * positive, or kslab's own, negative: prim.h), KSLAB_RSEQ_NONE in the
 * per-thread mode.  One hidden variable (a direct load, no GOT) serves as
 * both the mode test and the sections' input. */
extern long kslab_rseq_off __attribute__((visibility("hidden")));
#define kslab_percpu (kslab_rseq_off != KSLAB_RSEQ_NONE)
/* KSLAB_RSEQ_IDLE_CPU (prim.h), the CPU number a thread kslab has not
 * registered yet reads in its own struct rseq, is the last entry of every
 * array: never a real CPU (kslab_percpu_init keeps the per-thread mode
 * where there are as many possible CPUs), cap 0 in every array (percpu.c),
 * so every section misses on it. */
_Static_assert(KSLAB_RSEQ_IDLE_CPU == PCPU_MAX_CPUS - 1, "the idle entry is every array's last");

/* The free tag (rule 8): a free object in a sheaf holds kslab_tag_key at
 * x + s->offset.  Random per process and odd: never 0, never a pointer.
 * The same for every object (an address-dependent tag cost the push an
 * instruction, and one leaked tag gives the key either way).
 *
 * In the kernel API's libraries the sections carry it as an instruction's
 * immediate, not a load (the drop-in: below): the push stores `movq $key,
 * (x)` and the claim compares with `cmpq $key, (x)`, one instruction each
 * where a key in memory takes two (x86 has no memory-to-memory store or
 * compare).  So the key is a sign-extended 32-bit
 * value (31 random bits and the low bit set), written into every such
 * immediate at start-up (kslab_percpu_init: tag_patch in percpu.c), as
 * the kernel patches its runtime constants; each immediate's place is
 * listed in the section kslab_tag_sites (PCPU_TAG_SITE).  Until then, and
 * for good if the text cannot be made writable, every immediate holds
 * PCPU_TAG_PLACEHOLDER and so does kslab_tag_key: the tag still catches
 * every double free, but the key is no secret.  Measured (rdtsc cycles a
 * pair, fastest chunk, minimum of 15 interleaved runs, AMD EPYC): the
 * kmalloc(32) pair 11.050 with the key loaded, 10.387 as an immediate,
 * 10.114 without the tag; the kmem_cache pair 9.464, 9.243, 8.671. */
extern uint64_t kslab_tag_key __attribute__((visibility("hidden")));
#define PCPU_TAG_PLACEHOLDER 0x5a5a5a5b
/* The drop-in (KSLAB_DROPIN) keeps the key in memory, loaded into a
 * register for each tag instruction: the patch costs each process about
 * 30 us at start-up (its two mprotect calls, the code pages copied; `seq 1
 * 5` under the drop-in, 1 500 runs in 5 interleaved rounds: about 1 240
 * against 1 210 us), and it bought the drop-in's malloc pairs nothing
 * measurable (12.623 cycles a pair with it, without it, and without the
 * tag).  The kernel API's libraries patch.
 *
 * PCPU_TAG_KEY: the key as a tag instruction's source operand;
 * PCPU_TAG_KEY_IN: the input operand that needs (appended to an asm's
 * inputs); PCPU_PUSH_KEY_IN and PCPU_PUSH_V_OUT: the pushes' (an input and
 * a scratch output, where the key is loaded); PCPU_TAG_SITE, after each
 * instruction with the immediate: records the imm32 that ends it (label
 * 55, a number no other section uses) as a 32-bit offset from the
 * record. */
/* (the key loaded into a register: the drop-in's claims, every slow
 * path's) */
#define PCPU_TAG_LOADED_KEY "%[key]"
#define PCPU_TAG_LOADED_IN , [key] "r"(kslab_tag_key)
#if defined(KSLAB_NO_FREE_TAG)
#define PCPU_TAG_KEY_IN
#define PCPU_PUSH_KEY_IN
#define PCPU_PUSH_V_OUT(v)
#elif defined(KSLAB_DROPIN)
#define PCPU_TAG_KEY PCPU_TAG_LOADED_KEY
#define PCPU_TAG_KEY_IN PCPU_TAG_LOADED_IN
/* (the pushes load it inside the section, into the scratch v, as before
 * the immediates: with the load hoisted before the section the random-size
 * step was 0.6-1 % slower, 18.55 against 18.44 cycles) */
#define PCPU_PUSH_KEY_IN , [key] "m"(kslab_tag_key)
#define PCPU_PUSH_V_OUT(v) , [v] "=&r"(v)
#define PCPU_TAG_SITE ""
#else
#define PCPU_TAG_IMMEDIATE 1
#define PCPU_TAG_KEY "$" PCPU_STR(PCPU_TAG_PLACEHOLDER)
#define PCPU_TAG_KEY_IN
#define PCPU_PUSH_KEY_IN
#define PCPU_PUSH_V_OUT(v)
#define PCPU_TAG_SITE                                                         \
    "55:\n\t"                                                                 \
    ".pushsection kslab_tag_sites, \"a\"\n\t"                                 \
    ".balign 4\n\t"                                                          \
    ".long 55b - 4 - .\n\t"                                                   \
    ".popsection\n\t"
#endif
/* Does s live on the per-CPU sheaves (and its free objects carry the tag)? */
static inline bool pcpu_cache(const struct kmem_cache *s)
{
    return kslab_percpu && s->pcpu_cap;
}
static inline uint64_t *pcpu_tag_word(const struct kmem_cache *s, void *x)
{
    return (uint64_t *)((char *)x + s->offset);
}
/* KSLAB_NO_FREE_TAG (cmake -DKSLAB_FREE_TAG=OFF): a build for measurement
 * only, which neither writes nor checks the tag -- what the double-free
 * defence costs, shown beside the default in make bench.  It stops none of
 * the double frees the tag stops (the sheaf-top compares stay), so the
 * suite's double-free tests would fail on it: it is never the library
 * installed or tested. */
#ifdef KSLAB_NO_FREE_TAG
static inline void pcpu_tag_set(const struct kmem_cache *s, void *x) {}
#else
static inline void pcpu_tag_set(const struct kmem_cache *s, void *x)
{
    *pcpu_tag_word(s, x) = kslab_tag_key;
}
#endif
/* Two forms of the claim, each where it measured faster.  Both test that
 * x's tag word (addr, whose operands follow) holds the key (key_src, an
 * immediate or a register; key_in its input operand, if any; site its
 * record, if any), leave 0 there if it did, and leave the word as they
 * found it if it did not, for the report (kslab_claim_failed).
 *
 * PCPU_TAG_XOR: one xor into memory tests and clears (bad: the word was not
 * the tag; it now holds what was there xor the key, which the caller's
 * failure path xors back).  A plain load, compare and store would be 2
 * instructions more.
 *
 * PCPU_TAG_CMP: a compare, a jump to the label bad if the word differs,
 * else a store of 0 -- an instruction more than the xor, but its store
 * waits for nothing, where the xor's waits for its load.
 *
 * Which is faster depends on the pair around it, so each inline pop names
 * its form (enum pcpu_claim).  Measured in rdtsc cycles a pair, the
 * fastest chunk of 5-7 interleaved runs, at each of six code placements
 * (kmalloc.c's functions moved 64 bytes at a time), AMD EPYC: kmalloc(32)
 * with the xor 10.56-10.97, with the compare 9.88-10.41, without the tag
 * 9.87-11.23 (the placement alone moves that one by 14 %): kmalloc's pop
 * compares.  The kmem_cache pair at three placements: the xor 8.81-8.83,
 * the compare 8.94-8.96, no tag 8.57-8.58: kmem_cache_alloc's pop xors.
 * Under the drop-in (the key in a register) the compare cost every malloc
 * pair a core cycle (13.33 against 12.62 with the xor and without the
 * tag): it xors, as do the slow paths (pcpu_tag_unclaimed). */
#define PCPU_TAG_XOR(bad, key_src, site, key_in, addr, ...)                   \
    __asm__ __volatile__("xorq " key_src ", " addr "\n\t" site                \
                         : "=@ccnz"(bad)                                      \
                         : __VA_ARGS__ key_in                                 \
                         : "memory")
#define PCPU_TAG_CMP(bad, key_src, site, key_in, addr, ...)                   \
    __asm__ goto("cmpq " key_src ", " addr "\n\t" site                       \
                 "jne %l[" #bad "]\n\t"                                      \
                 "movq $0, " addr "\n\t"                                     \
                 :                                                            \
                 : __VA_ARGS__ key_in                                         \
                 : "memory", "cc"                                             \
                 : bad)
/* (PCPU_CLAIM_CMP: at a constant offset 0; the xor elsewhere) */
enum pcpu_claim { PCPU_CLAIM_XOR, PCPU_CLAIM_CMP };
/* A failed xor's word back as it was (off the fast path) */
static inline void pcpu_tag_unxor(void *x, uintptr_t offset)
{
    *(uint64_t *)((char *)x + offset) ^= kslab_tag_key;
}
/* The claim's test alone, in the form how where the key is an immediate
 * (fast_alloc reports by a jump to kslab_claim_failed): true if x's word
 * did not hold the tag (it is left as it was); else it is now 0.  Not an
 * atomic: x is the allocation's alone once its pop has committed. */
static inline bool pcpu_tag_unclaimed_at(void *x, uintptr_t offset, enum pcpu_claim how)
{
    (void)how;
#ifdef KSLAB_NO_FREE_TAG
    return false;
#else
#ifdef PCPU_TAG_IMMEDIATE
    /* the compare where it was measured faster: kmalloc's pop, whose tag
     * is at offset 0 (a constant there); the xor everywhere else */
    if (how == PCPU_CLAIM_CMP && __builtin_constant_p(offset) && offset == 0) {
        PCPU_TAG_CMP(bad, PCPU_TAG_KEY, PCPU_TAG_SITE, PCPU_TAG_KEY_IN, "(%[x])", [x] "r"(x));
        return false;
    bad:
        return true;
    }
#endif
    /* (x, offset) addressed in the instruction: no add for the address;
     * the kmalloc and malloc classes (offset 0, a constant there) address
     * x alone, with no register zeroed for the offset (one instruction a
     * pop) */
    bool bad;
    if (__builtin_constant_p(offset) && offset == 0)
        PCPU_TAG_XOR(bad, PCPU_TAG_KEY, PCPU_TAG_SITE, PCPU_TAG_KEY_IN, "(%[x])", [x] "r"(x));
    else
        PCPU_TAG_XOR(bad, PCPU_TAG_KEY, PCPU_TAG_SITE, PCPU_TAG_KEY_IN, "(%[x],%[o])",
                     [x] "r"(x), [o] "r"(offset));
    if (unlikely(bad))
        pcpu_tag_unxor(x, offset);
    return bad;
#endif
}
/* The same off the fast paths (refills, drains, bulk calls, the nolock
 * calls): the key loaded from memory into a register, as before the
 * immediates, so that the patched instructions, and the code pages each
 * process gets its own copy of, stay with the fast paths (6 pages of
 * libkslab.so; 9 with every claim patched).  A plain C load, xor and
 * store here made seed 001's bulk rows 3-7 % slower (4.41 against 4.10 ns
 * an object at 16). */
static inline bool pcpu_tag_unclaimed(struct kmem_cache *s, void *x)
{
#ifdef KSLAB_NO_FREE_TAG
    return false;
#else
    bool bad;
    PCPU_TAG_XOR(bad, PCPU_TAG_LOADED_KEY, "", PCPU_TAG_LOADED_IN, "(%[x],%[o])",
                 [x] "r"(x), [o] "r"((uintptr_t)s->offset));
    if (unlikely(bad))
        pcpu_tag_unxor(x, s->offset);
    return bad;
#endif
}
/* Where a free object leaves the sheaves -- a pop, a drain to its slab:
 * every object there carries its tag, so a different word means x was
 * freed twice (its other copy left first and took the tag) or written
 * while free (an overflow from the object before it, a write after free)
 * -- reported, never handed out or linked.  The word is left 0. */
static inline void pcpu_tag_claim(struct kmem_cache *s, void *x)
{
    if (unlikely(pcpu_tag_unclaimed(s, x)))
        kslab_claim_failed(s, x);
}

#if defined(__SANITIZE_THREAD__)
#define KSLAB_PCPU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KSLAB_PCPU_TSAN 1
#endif
#endif
#ifdef KSLAB_PCPU_TSAN
/* TSan cannot see the asm: an object handed from a free on one thread to an
 * allocation on another through a sheaf gets its happens-before here, on
 * the cache's sheaf array (release before a push commits, acquire after a
 * pop). */
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define pcpu_tsan_acquire(e) __tsan_acquire(e)
#define pcpu_tsan_release(e) __tsan_release(e)
#else
/* not evaluated: an argument such as pcpu_base(s), an atomic load, costs
 * nothing where TSan is not watching */
#define pcpu_tsan_acquire(e) ((void)sizeof(e))
#define pcpu_tsan_release(e) ((void)sizeof(e))
#endif

/* The section's descriptor (struct rseq_cs: version, flags, start_ip,
 * post_commit_offset, abort_ip) and its abort handler, out of line.  The
 * _B forms take a bias, a string appended to every displacement of the
 * entry ("" or "-1"): kfree's plain push (pcpu_kfree_push0) indexes from
 * its map word, the array's address plus 1, as it is. */
#define PCPU_RSEQ_CS PCPU_RSEQ_CS_B("")
#define PCPU_RSEQ_CS_B(bias)                                                  \
    ".pushsection __rseq_cs, \"aw\"\n\t"                                      \
    ".balign 32\n\t"                                                          \
    "3:\n\t"                                                                  \
    ".long 0x0, 0x0\n\t"                                                      \
    ".quad 1f, 2f - 1f, 4f\n\t"                                               \
    ".popsection\n\t"                                                         \
    "0:\n\t"                                                                  \
    "leaq 3b(%%rip), %[t]\n\t"                                                \
    "movq %[t], %%fs:8(%[off])\n\t"                                           \
    "1:\n\t"                                                                  \
    "movl %%fs:4(%[off]), %k[e]\n\t"                                          \
    "shlq $" PCPU_STR(PCPU_SHIFT) ", %[e]\n\t"                               \
    "addq %[base], %[e]\n\t"                                                  \
    "movq " bias "(%[e]), %[w]\n\t"                                           \
    "movzwl %w[w], %k[t]\n\t"
#define PCPU_RSEQ_ABORT                                                       \
    ".pushsection __rseq_failure, \"ax\"\n\t"                                 \
    ".byte 0x0f, 0xb9, 0x3d\n\t"     /* ud1 ...: the signature decodes */     \
    ".long 0x53053053\n\t"                                                    \
    "4:\n\t"                                                                  \
    "jmp 0b\n\t"                                                              \
    ".popsection\n\t"

/* The pushes' common steps (operands e, w, t as PCPU_RSEQ_CS leaves them,
 * x the object): miss if the sheaf is full or draining; miss if x is its
 * top object (objs[count - 1]: the immediate double free, reported at the
 * second free itself; below objs[0] it reads cap and pad, never an
 * address) -- the slow path's push also compares with objs[count - 2]
 * (free a, free b, free a); then x into objs[count] and the commit.  The
 * free tag (rule 8) catches every double free the compares miss, when the
 * object would be handed out again; it is written by PCPU_PUSH_TAG inside
 * each push's section, once x is sure to enter the sheaf.  Each
 * compare costs a pair about 0.1 ns (2 instructions). */
#define PCPU_PUSH_ROOM(miss) PCPU_PUSH_ROOM_B(miss, "")
#define PCPU_PUSH_ROOM_B(miss, bias)                                          \
    "cmpl " PCPU_STR(PCPU_CAP_OFF) bias "(%[e]), %k[t]\n\t"                   \
    "jae " miss "\n\t"
#define PCPU_PUSH_NOT_TOP(miss) PCPU_PUSH_NOT_TOP_B(miss, "")
#define PCPU_PUSH_NOT_TOP_B(miss, bias)                                       \
    "cmpq %[x], " PCPU_STR(PCPU_TOP_OFF) bias "(%[e],%[t],8)\n\t"             \
    "je " miss "\n\t"
#define PCPU_PUSH_NOT_TOP2(miss)                                              \
    PCPU_PUSH_NOT_TOP(miss)                                                   \
    "cmpq %[x], " PCPU_STR(PCPU_TOP2_OFF) "(%[e],%[t],8)\n\t"                 \
    "je " miss "\n\t"
/* Rule 8 inside a section (x proved an object of a live slab): x's tag
 * into its word, one store of an immediate (the drop-in: the key loaded
 * into the scratch v, then stored).  A store only: no wait on x's line. */
#ifdef KSLAB_NO_FREE_TAG
#define PCPU_PUSH_TAG ""
#define PCPU_PUSH_TAG0 ""
#else
/* (at offset 0: kfree's plain push) */
#ifdef PCPU_TAG_IMMEDIATE
#define PCPU_PUSH_TAG_AT(where) "movq " PCPU_TAG_KEY ", " where "\n\t" PCPU_TAG_SITE
#else
#define PCPU_PUSH_TAG_AT(where) "movq %[key], %[v]\n\t" "movq %[v], " where "\n\t"
#endif
#define PCPU_PUSH_TAG0 PCPU_PUSH_TAG_AT("(%[x])")
/* (toff: the word's offset in a 64-bit register, so the store addresses
 * (x, toff) with no copy into a scratch register) */
#define PCPU_PUSH_TAG PCPU_PUSH_TAG_AT("(%[x],%[toff])")
#endif
#define PCPU_PUSH_COMMIT PCPU_PUSH_COMMIT_B("")
#define PCPU_PUSH_COMMIT_B(bias)                                              \
    "movq %[x], " PCPU_STR(PCPU_OBJS_OFF) bias "(%[e],%[t],8)\n\t"            \
    "addq $1, %[w]\n\t"                                                      \
    "movq %[w], " bias "(%[e])\n\t"       /* commit */                       \
    "2:\n\t"

static inline struct pcpu_sheaf *pcpu_base(const struct kmem_cache *s)
{
    /* acquire (a plain load on x86): pairs with the release that published
     * the array, so the caps the sections read are initialised */
    return __atomic_load_n(&s->pcpu, __ATOMIC_ACQUIRE);
}

/* After a pop's commit, outside its section: prefetchw the sheaf's new
 * top, the object the next pop there will claim (rule 8 reads and writes
 * its tag word).  Where threads hand objects to threads on other CPUs,
 * that line is often elsewhere: in the server row at 2 threads, an
 * instrumented build timed 1 claim in 64 and found 23 % of them waiting
 * over 150 TSC cycles more than a second load of the same word (12 % of
 * popped objects had been freed on the other CPU and came through the
 * barn, three quarters of them slow; of those freed on the same CPU a
 * fifth were as slow: their lines had gone to the other CPU meanwhile),
 * and at 16 threads 10 %.  The load reads the slot just below the one the
 * pop read (its line, as a rule) after the commit: a racy read, which at
 * worst prefetches a stale or non-address value (below objs[0] it reads
 * nobj, a small integer): a prefetch never faults.  Measured (paired
 * medians, with / without, three series of 21-31 rounds): server rows 2,
 * 4, 16 threads 1.007-1.036, 1.052-1.075, 1.022-1.072; pipeline 2 and 16
 * threads 1.070, 0.998 (15 rounds); the one-thread kmem_cache pair 2 %
 * slower (rdtsc, 9.21 against 9.02 cycles, fastest chunk) and the
 * one-thread random-size step 0-3 % either way; python3 0.994 and sqlite3
 * 0.995 (21 and 31 rounds).  Two instructions a pop. */
#define PCPU_POP_PREFETCH                                                     \
    "movq " PCPU_STR(PCPU_TOP_OFF) "(%[e],%[t],8), %[w]\n\t"                 \
    "prefetchw (%[w])\n\t"
/* Pop the current CPU's sheaf: an object, or NULL (empty, draining, no
 * sheaves yet).  13 instructions, no lock, no atomic.
 *
 * Use no output of this asm goto in a second asm after it: GCC 12 then
 * compiled the out-of-line copy's miss path to return the obj register
 * (never written on that path) instead of NULL, and every program under
 * the drop-in stopped at its first malloc with a bad-tag report.  Seen
 * with a second output (the object below the top) fed to a prefetchw; the
 * same prefetch inside this asm, after the commit, compiled right. */
static inline void *pcpu_pop_base(struct pcpu_sheaf *base, long off)
{
    void *obj;
    uintptr_t e, w, t;
    __asm__ __volatile__ goto(PCPU_RSEQ_CS
                 "subl $1, %k[t]\n\t"
                 "cmpl " PCPU_STR(PCPU_CAP_OFF) "(%[e]), %k[t]\n\t"
                 "jae %l[miss]\n\t"
                 "movq " PCPU_STR(PCPU_OBJS_OFF) "(%[e],%[t],8), %[obj]\n\t"
                 "addq $0xffff, %[w]\n\t"      /* count - 1, allocations + 1 */
                 "movq %[w], (%[e])\n\t"       /* commit */
                 "2:\n\t"
                 PCPU_POP_PREFETCH
                 PCPU_RSEQ_ABORT
                 : [obj] "=&r"(obj), [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t)
                 : [off] "r"(off), [base] "r"(base)
                 : "memory", "cc"
                 : miss);
    pcpu_tsan_acquire(base);
    if (!obj)                       /* a sheaf holds objects, never NULL */
        __builtin_unreachable();
    return obj;
miss:
    return NULL;
}
/* The inline pop (rule 10): through s->pcpu_tag0, the tag at offset 0 */
static inline void *pcpu_pop_tag0(struct kmem_cache *s, long off)
{
    /* acquire (a plain load on x86): pairs with pcpu_create's release */
    return pcpu_pop_base(__atomic_load_n(&s->pcpu_tag0, __ATOMIC_ACQUIRE), off);
}
/* The pop of the slow paths and of cache_alloc_miss: through s->pcpu */
static inline void *pcpu_pop(struct kmem_cache *s)
{
    return pcpu_pop_base(pcpu_base(s), kslab_rseq_off);
}

/* Push x (already validated) onto the current CPU's sheaf of the array at
 * base, writing its tag at x + toff (rule 8) in the section, once x is
 * sure to enter it: a cache without sheaves (cap 0) misses before, and its
 * objects' words stay the back-end's.  false if it is full or draining,
 * or if x is its top (an immediate double free: the slow path reports
 * it). */
static inline bool pcpu_push_base(struct pcpu_sheaf *base, uint32_t toff, void *x)
{
    uintptr_t e, w, t, v __attribute__((unused));   /* v: PCPU_PUSH_V_OUT */
    pcpu_tsan_release(base);            /* before the commit that publishes x */
    __asm__ __volatile__ goto(PCPU_RSEQ_CS
                 PCPU_PUSH_ROOM("%l[miss]")
                 PCPU_PUSH_NOT_TOP("%l[miss]")
                 PCPU_PUSH_TAG
                 PCPU_PUSH_COMMIT
                 PCPU_RSEQ_ABORT
                 : [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t) PCPU_PUSH_V_OUT(v)
                 : [off] "r"(kslab_rseq_off), [base] "r"(base), [x] "r"(x),
                   [toff] "r"((uintptr_t)toff) PCPU_PUSH_KEY_IN
                 : "memory", "cc"
                 : miss);
    return true;
miss:
    return false;
}
/* Inside a section (e the entry, v and rcx scratch): is v, an offset from
 * a slab's first object, an object's start?  obj_index (slab_common.h)
 * from the entry's copy of the geometry: the index (v * inv rotated right
 * by shift) below objects; to `fail` if not.  Both the kfree push and the
 * hinted push test this way.  Tried instead: the low shift bits tested
 * clear, then the product alone against objects << shift (exact too, no
 * rotate by cl): the same instruction count with a second branch, and
 * not faster (rdtsc, fastest of 21 interleaved runs twice: random sizes
 * 8-1000 B, 2048 live 15.73 / 16.06 against 15.59 / 15.66 cycles; the
 * kmem_cache pair 9.04 / 8.74 against 8.78 / 8.70).  test_death's sweep
 * fails if either half of the test goes. */
#define PCPU_OBJECT_AT(fail) PCPU_OBJECT_AT_B(fail, "")
#define PCPU_OBJECT_AT_B(fail, bias)                                          \
    "imulq " PCPU_STR(PCPU_INV_OFF) bias "(%[e]), %[v]\n\t"                \
    "movl " PCPU_STR(PCPU_GSHIFT_OFF) bias "(%[e]), %%ecx\n\t"             \
    "rorq %%cl, %[v]\n\t"                                                   \
    "cmpq " PCPU_STR(PCPU_NOBJ_OFF) bias "(%[e]), %[v]\n\t"                \
    "jae " fail "\n\t"

/* kfree's push from a PMAP_BASE word (pages.h; rule 9): word is the
 * array's address plus 1, used as it is (every displacement one less), for
 * a slab whose first object is at its start, of a cache whose tag word is
 * at offset 0: x's offset in its slab is all the object test needs, and
 * the tag goes to x itself.  pcpu_kfree_push below, for PMAP_BASE_COL
 * words, loads the colour and the tag offset besides: measured against it
 * (rdtsc, fastest of 21 interleaved runs twice, one thread, a build that
 * sent every word through this push): random sizes 8-1000 B, 2048 live
 * 14.70 / 14.77 against 15.29 / 15.41 cycles a free+malloc step; the
 * kmalloc(32) pair 13.40 against 14.33. */
/* Both kfree pushes' section: x's offset in its slab (less the colour,
 * colour_step), the object test, room, not the top, the tag (tag_step),
 * the commit -- one order for both, which rule 2 needs (nothing but the
 * tag, harmless to a retry, is written before the commit). */
#define PCPU_KFREE_SECTION(bias, colour_step, tag_step)                       \
    PCPU_RSEQ_CS_B(bias)                                                      \
    "movq %[x], %[v]\n\t"                                                     \
    "andq " PCPU_STR(PCPU_OFFMASK_OFF) bias "(%[e]), %[v]\n\t"                \
    colour_step                                                               \
    PCPU_OBJECT_AT_B("%l[miss]", bias)                                        \
    PCPU_PUSH_ROOM_B("%l[miss]", bias)                                        \
    PCPU_PUSH_NOT_TOP_B("%l[miss]", bias)                                     \
    tag_step                                                                  \
    PCPU_PUSH_COMMIT_B(bias)                                                  \
    PCPU_RSEQ_ABORT
static inline bool pcpu_kfree_push0(uint64_t word, void *x)
{
    uintptr_t e, w, t, v, c;
    pcpu_tsan_release((struct pcpu_sheaf *)(uintptr_t)(word - PMAP_BASE));
    __asm__ __volatile__ goto(PCPU_KFREE_SECTION("-1", "", PCPU_PUSH_TAG0)
                 : [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t), [v] "=&r"(v), "=&c"(c)
                 : [off] "r"(kslab_rseq_off), [base] "r"(word), [x] "r"(x) PCPU_PUSH_KEY_IN
                 : "memory", "cc"
                 : miss);
    return true;
miss:
    return false;
}

/* kfree's push (rule 9): x, from a page of a published slab whose
 * colour is colour, of the cache whose sheaf array is base, onto the
 * current CPU's sheaf, once it is an object's start -- tested inside the
 * section from the entry's copy of the geometry (object_start of
 * slab_common.h: x - (slab start + colour) is (x & ~slab_mask) - colour),
 * so that the entry's first line is the only line of the array kfree
 * reads.  false: not an object start, full, draining, or x its top (the
 * slow path decides and reports).  A cache without sheaves has an all-0
 * entry here: the test fails (index 0 is not below 0 objects). */
static inline bool pcpu_kfree_push(struct pcpu_sheaf *base, uint32_t colour, void *x)
{
    uintptr_t e, w, t, v, c;
    pcpu_tsan_release(base);            /* before the commit that publishes x */
    __asm__ __volatile__ goto(PCPU_KFREE_SECTION("", "subq %[col], %[v]\n\t",
                                                 "movq " PCPU_STR(PCPU_TOFF_OFF)
                                                 "(%[e]), %[toff]\n\t" PCPU_PUSH_TAG)
                 : [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t), [v] "=&r"(v), [toff] "=&c"(c)
                 : [off] "r"(kslab_rseq_off), [base] "r"(base), [x] "r"(x),
                   [col] "r"((uintptr_t)colour) PCPU_PUSH_KEY_IN
                 : "memory", "cc"
                 : miss);
    return true;
miss:
    return false;
}
/* The same onto s's sheaves */
static inline bool pcpu_push(struct kmem_cache *s, void *x)
{
    return pcpu_push_base(pcpu_base(s), s->offset, x);
}

/* The same push that also sets the CPU's hint (rule 6): the slab whose
 * first object is hint_start, checked at generation hint_gen. */
static inline bool pcpu_push_hint(struct kmem_cache *s, void *x, uintptr_t hint_start,
                                  uint64_t hint_gen)
{
    uintptr_t e, w, t, v __attribute__((unused));   /* v: PCPU_PUSH_V_OUT */
    pcpu_tsan_release(pcpu_base(s));
    __asm__ __volatile__ goto(PCPU_RSEQ_CS
                 PCPU_PUSH_ROOM("%l[miss]")
                 PCPU_PUSH_NOT_TOP("%l[miss]")
                 "movq %[hs], " PCPU_STR(PCPU_HINT_OFF) "(%[e])\n\t"   /* start, then gen */
                 "movq %[hg], " PCPU_STR(PCPU_GEN_OFF) "(%[e])\n\t"
                 PCPU_PUSH_TAG
                 PCPU_PUSH_COMMIT
                 PCPU_RSEQ_ABORT
                 : [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t) PCPU_PUSH_V_OUT(v)
                 : [off] "r"(kslab_rseq_off), [base] "m"(s->pcpu), [x] "r"(x),
                   [hs] "r"(hint_start), [hg] "r"(hint_gen),
                   [toff] "r"((uintptr_t)s->offset) PCPU_PUSH_KEY_IN
                 : "memory", "cc"
                 : miss);
    return true;
miss:
    return false;
}

/* The hinted push (rule 6): x goes onto the current CPU's sheaf of the
 * array base_m (s->pcpu_tag0, or s->pcpu) if the CPU's hint vouches for it
 * (an object start of the hinted slab, no slab given back since);
 * otherwise to `check`.  tag: PCPU_PUSH_TAG0 (the word at x, rule 10) or
 * PCPU_PUSH_TAG with toff_in its operand, PCPU_TOFF_IN(offset).  Operands:
 * base as a memory operand (x86: a plain load is the acquire pcpu_base
 * gives), one register fewer, so kmem_cache_free's per-CPU path saves none
 * (its unhinted check is out of line for the same reason; the per-thread
 * mode's push, which decodes the head's successor, saves two after its
 * range test). */
#define PCPU_PUSH_HINTED(s, base_m, x, tag, toff_in, check, miss)                 \
    do {                                                                        \
        uintptr_t e_, w_, t_, v_, c_;                                           \
        __asm__ __volatile__ goto(PCPU_RSEQ_CS                                  \
                 PCPU_PUSH_ROOM("%l[" #miss "]")                                \
                 "movq %[x], %[v]\n\t"   /* an object of the hinted slab */      \
                 "subq " PCPU_STR(PCPU_HINT_OFF) "(%[e]), %[v]\n\t"             \
                 PCPU_OBJECT_AT("%l[" #check "]")                               \
                 "movq " PCPU_STR(PCPU_GEN_OFF) "(%[e]), %[v]\n\t"              \
                 "cmpq %[gen], %[v]\n\t" /* no slab given back since */         \
                 "jne %l[" #check "]\n\t"                                       \
                 PCPU_PUSH_NOT_TOP("%l[" #miss "]")                             \
                 tag                                                            \
                 PCPU_PUSH_COMMIT                                               \
                 PCPU_RSEQ_ABORT                                                \
                 : [e] "=&r"(e_), [w] "=&r"(w_), [t] "=&r"(t_), [v] "=&r"(v_),   \
                   "=&c"(c_)                                                    \
                 : [off] "r"(kslab_rseq_off), [base] "m"(base_m), [x] "r"(x),   \
                   [gen] "m"((s)->pcpu_gen) toff_in PCPU_PUSH_KEY_IN              \
                 : "memory", "cc"                                               \
                 : miss, check);                                                \
    } while (0)
#define PCPU_TOFF_IN(offset) , [toff] "r"((uintptr_t)(offset))

/* kmem_cache_free's push of x, not yet validated, when the hint (rule 6)
 * vouches for it: one range test.  tag0: through s->pcpu_tag0 with the tag
 * at x (the inline path, rule 10), else through s->pcpu with the tag at
 * x + s->offset (kmem_cache_free_miss).  PCPU_FREE_CHECK: the hint does
 * not vouch -- pcpu_free_checked, out of line (its push takes two
 * registers more than the caller-saved ones, and inline it made
 * kmem_cache_free save and restore two on every free: 6 instructions a
 * pair).  PCPU_FREE_MISS: full, draining, no sheaves, or x the sheaf's top
 * object -- the slow path decides and reports. */
enum pcpu_free_result { PCPU_FREE_PUSHED, PCPU_FREE_CHECK, PCPU_FREE_MISS };
static inline __attribute__((always_inline)) enum pcpu_free_result
pcpu_free_hinted(struct kmem_cache *s, void *x, bool tag0)
{
    pcpu_tsan_release(pcpu_base(s));    /* before the commit that publishes x */
    if (tag0)
        PCPU_PUSH_HINTED(s, s->pcpu_tag0, x, PCPU_PUSH_TAG0, , check, miss);
    else
        PCPU_PUSH_HINTED(s, s->pcpu, x, PCPU_PUSH_TAG, PCPU_TOFF_IN(s->offset), check, miss);
    return PCPU_FREE_PUSHED;
check:
    return PCPU_FREE_CHECK;
miss:
    return PCPU_FREE_MISS;
}

/* The full check (x in an arena, a live slab of s, an object start, not
 * its slab's free head), whose push sets the hint.  false: not an object
 * of s, or the push missed -- the slow path decides and reports. */
static inline bool pcpu_free_checked(struct kmem_cache *s, void *x)
{
    /* acquire: the generation is read before the descriptor it vouches
     * for (pairs with the release increment in kslab_discard_slab) */
    uint64_t gen = __atomic_load_n(&s->pcpu_gen, __ATOMIC_ACQUIRE);
    struct slab *slab;
    if (!in_arena(x) || !(slab = kslab_slab_find(s, x)) || slab_freelist(slab) == x)
        return false;
    return pcpu_push_hint(s, x, ((uintptr_t)x & s->slab_mask) + slab->pg_colour, gen);
}

/* The slow paths' sections (percpu.c). */
enum pcpu_push_result { PCPU_PUSHED, PCPU_MISS, PCPU_DUP };
enum pcpu_push_result pcpu_push_slow(struct kmem_cache *s, void *x, struct pcpu_sheaf **ep);
unsigned pcpu_pop_batch(struct kmem_cache *s, void **dst, unsigned n, struct pcpu_sheaf **ep,
                        bool alloc);
unsigned pcpu_push_batch(struct kmem_cache *s, void *const *src, unsigned n,
                         struct pcpu_sheaf **ep);

/* Slow paths and management (percpu.c). */
void kslab_percpu_init(void);
void *kslab_pcpu_alloc(struct kmem_cache *s, gfp_t gfp);
void kslab_pcpu_free(struct kmem_cache *s, void *x);     /* x validated */
int kslab_pcpu_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t size, void **p);
void kslab_pcpu_free_bulk(struct kmem_cache *want, size_t size, void **p);
void kslab_pcpu_drain(struct kmem_cache *s);             /* shrink: every CPU's sheaf */
void kslab_pcpu_destroy(struct kmem_cache *s, bool reuse); /* destroy: nobody uses s; reuse: no objects left */
void kslab_pcpu_events(struct kmem_cache *s, uint64_t ev[NR_STATS]);
/* The top of the current CPU's sheaf of s, or NULL: a racy read, only for
 * the bulk frees' double-free test. */
void *kslab_pcpu_top(struct kmem_cache *s);
/* Caches without sheaves, and the pseudo caches that own metadata pages
 * (their descriptors name them, so kfree's inline path reaches them), point
 * at it: an address constant, for static initialisers too. */
extern struct pcpu_sheaf pcpu_none[PCPU_MAX_CPUS] __attribute__((visibility("hidden")));
/* A static struct kmem_cache's initialiser for both pointers (rule 10) */
#define PCPU_NONE_INIT .pcpu = pcpu_none, .pcpu_tag0 = pcpu_none
extern kslab_lock_t kslab_pcpu_lock;
#endif
