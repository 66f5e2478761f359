// gemmlab_ptx.h: the inline PTX of the book's kernels, run by the CPU emulator from their own asm statements.
//
// The loader (build.py) rewrites each asm statement whose instructions the emulator runs into a call of
// gl_emu::ptx::run with the statement's PTX text as written (string literals, macro arguments and all) and its
// C operands: outputs by address, inputs by value. So what runs is what the kernel says: an edited PTX string, a
// different register, shape, descriptor field or swizzle mode changes what the emulator does, as it changes what
// the GPU does. The text is parsed once per statement (scopes, .reg declarations, predicates, vector, memory and
// tensor operands) and run by the thread that reaches it. Instructions that a warp or a warpgroup executes
// together (mma.sync, ldmatrix, wgmma: .sync.aligned) wait until every thread of it has reached the same
// statement; the last to arrive computes every thread's results from every thread's registers, in the fragment
// layouts the PTX ISA gives, with the tensor cores' arithmetic (gl_emu_tensor.h). Each thread's own memory
// accesses are checked as its own (the memory check, racecheck). What runs: mma.sync and ldmatrix; Hopper's
// wgmma (shared-memory descriptors, the swizzles), TMA copies with gemmlab.tma's emulated tensor maps, mbarriers
// (a waiting thread sleeps until its phase completes: a barrier that never completes is a deadlock that names
// it), named barriers, setmaxnreg (checked); cp.async; ld and st; mov, setp, selp; the fences (sequentially
// consistent memory: they order nothing more). An instruction or form outside that stops the thread by name.
#pragma once
#include "gemmlab_emu.h"
#include "gl_emu_half.h"
#include "gl_emu_tensor.h"
#include <algorithm>
#include <initializer_list>

namespace gl_emu {
namespace ptx {

// One C operand of an asm statement: an output (`=`, or `+` read and written) by its address, an input by its
// bytes. kind is the constraint's letter (r: 32 bits, l: 64, h: 16, f: float, d: double, n: a constant).
struct Op {
    void* addr;
    unsigned long long bits;
    unsigned char size;
    char mode;
    char kind;
    unsigned char run;     // outs: this many operands, the elements of one array from addr on (run() spreads them)
};

GL_NOSAN inline char constraint_kind(const char* c)
{
    while (*c == '=' || *c == '+' || *c == '&') ++c;
    return *c;
}
template <class T>
GL_NOSAN inline Op out(const char* c, T& v)
{
    Op o{&v, 0, (unsigned char)(sizeof(T) < 8 ? sizeof(T) : 8), c[0] == '+' ? '+' : '=', constraint_kind(c)};
    if (o.mode == '+') std::memcpy(&o.bits, &v, o.size);
    return o;
}
// n output operands that are one array's elements in order (the loader writes `"+f"(d[0]), ..., "+f"(d[127])`
// as one of these): cheaper to pass than n outs
template <class T>
GL_NOSAN inline Op outs(const char* c, T* v, int n)
{
    return Op{v, 0, (unsigned char)(sizeof(T) < 8 ? sizeof(T) : 8), c[0] == '+' ? '+' : '=', constraint_kind(c),
              (unsigned char)n};
}
template <class T>
GL_NOSAN inline Op in(const char* c, const T& v)
{
    Op o{nullptr, 0, (unsigned char)(sizeof(T) < 8 ? sizeof(T) : 8), 'i', constraint_kind(c)};
    std::memcpy(&o.bits, &v, o.size);
    if (o.kind == 'f' && sizeof(T) == 8) {            // a double given where the PTX takes a float
        double d;
        std::memcpy(&d, &v, 8);
        const float f = (float)d;
        o.bits = 0;
        std::memcpy(&o.bits, &f, 4);
    }
    return o;
}

// ---- the parsed text ---------------------------------------------------------------------------------------
enum Kind { K_C, K_REG, K_IMM, K_FLOAT, K_VEC, K_MEM, K_SINK, K_SREG, K_TENSOR };
struct Operand {
    int kind;
    long long value;       // K_C: the operand's number; K_REG: the register's; K_IMM: the value; K_SREG: which
    double real;           // K_FLOAT
    int first, count;      // K_VEC: its elements in Program::ops; K_MEM: its base (one operand) there;
                           // K_TENSOR ([map, {c0, c1, ...}]): the map's operand (first) and the coordinates' vector
    long long offset;      // K_MEM: the byte offset after the base
};
struct Instr {
    char opcode[112];
    int pred;              // the predicate register, or -1
    bool negated;
    int first, count;      // its operands in Program::ops
    // what its first run read from the opcode, for the runs after it (the checks that name a fault need a thread)
    mutable unsigned char family;      // which run_ function runs it (0: not looked at yet)
    mutable short shape_n, shape_k;    // a wgmma's N and K (0: not read yet)
    mutable unsigned char variant;     // a wgmma's: 1 fence, 2 commit_group, 3 wait_group, 4 mma_async (0: not read)
    mutable unsigned char precision;   // an mma_async's operand type (a Precision), read with its shape
    mutable short acc_first;           // and the C operand of its first accumulator when they are consecutive, or -1
    mutable unsigned char bytes, lanes;  // an ld's or st's element size and vector length (0: not read yet)
    mutable bool shared;               // an ld or st of shared memory (else global)
    mutable bool cluster;              // an ld or st of .shared::cluster (another block's shared memory, maybe)
};
constexpr int MAX_INSTR = 48, MAX_OPERANDS = 640, MAX_REGS = 32;
struct Program {
    const char* text;      // the statement's PTX (its address is the key: one string literal per statement)
    int n_instr, n_ops, n_regs;
    Instr instr[MAX_INSTR];
    Operand ops[MAX_OPERANDS];
    char reg_name[MAX_REGS][32];
    char error[256];       // why the text could not be read (empty when it could)
};

GL_NOSAN inline bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
GL_NOSAN inline const char* skip(const char* p, const char* end)
{
    while (p < end && space(*p)) ++p;
    return p;
}

enum Sreg { S_LANEID, S_WARPID, S_TID_X, S_TID_Y, S_TID_Z, S_NTID_X, S_CTAID_X, S_CTAID_Y, S_CTAID_Z,
            S_CLUSTER_CTARANK, S_CLUSTER_NCTARANK, S_COUNT };
static const char* const SREG_NAMES[S_COUNT] = {"laneid", "warpid", "tid.x", "tid.y", "tid.z", "ntid.x", "ctaid.x",
                                                "ctaid.y", "ctaid.z", "cluster_ctarank",
                                                "cluster_nctarank"};

GL_NOSAN inline int parse_operand(Program& p, const char* s, const char* end);

// [base], [base+off], [base + -off]
GL_NOSAN inline int parse_memory(Program& p, const char* s, const char* end)
{
    const char* plus = s;
    int depth = 0;
    while (plus < end && !(depth == 0 && (*plus == '+' || (*plus == '-' && plus > s)))) {
        if (*plus == '[' || *plus == '{') ++depth;
        if (*plus == ']' || *plus == '}') --depth;
        ++plus;
    }
    if (p.n_ops >= MAX_OPERANDS) return -1;
    const int at = p.n_ops++;
    const int base = parse_operand(p, s, plus);
    if (base < 0) return -1;
    long long off = 0;
    if (plus < end) {
        char num[64];
        size_t n = 0;
        for (const char* q = plus; q < end && n < sizeof num - 1; ++q)
            if (!space(*q) && *q != '+') num[n++] = *q;
        num[n] = 0;
        char* stop;
        off = std::strtoll(num, &stop, 0);
        if (*stop) return -1;
    }
    p.ops[at] = Operand{K_MEM, 0, 0, base, 1, off};
    return at;
}

// one operand from s to end (spaces around it allowed): the index of its entry in p.ops, or -1
GL_NOSAN inline int parse_operand(Program& p, const char* s, const char* end)
{
    s = skip(s, end);
    while (end > s && space(end[-1])) --end;
    if (s >= end || p.n_ops >= MAX_OPERANDS) return -1;
    if (*s == '{') {                                   // a vector: its elements after it
        if (end[-1] != '}') return -1;
        const int at = p.n_ops++;
        int elements[160], count = 0;
        const char* q = s + 1;
        while (q < end - 1) {
            const char* comma = q;
            while (comma < end - 1 && *comma != ',') ++comma;
            if (count == 160) return -1;
            const int e = parse_operand(p, q, comma);
            if (e < 0) return -1;
            elements[count++] = e;
            q = comma + 1;
        }
        // the elements in order, one block of entries (copied after any nested entries)
        if (p.n_ops + count > MAX_OPERANDS) return -1;
        const int first = p.n_ops;
        for (int i = 0; i < count; ++i) p.ops[p.n_ops++] = p.ops[elements[i]];
        p.ops[at] = Operand{K_VEC, 0, 0, first, count, 0};
        return at;
    }
    if (*s == '[') {
        if (end[-1] != ']') return -1;
        const char* comma = s + 1;                     // [map, {c0, c1}]: a tensor and its coordinates
        int depth = 0;
        while (comma < end - 1 && !(*comma == ',' && depth == 0)) {
            if (*comma == '{') ++depth;
            if (*comma == '}') --depth;
            ++comma;
        }
        if (comma < end - 1) {
            const int at = p.n_ops++;
            const int map = parse_operand(p, s + 1, comma), coords = parse_operand(p, comma + 1, end - 1);
            if (map < 0 || coords < 0 || p.ops[coords].kind != K_VEC) return -1;
            p.ops[at] = Operand{K_TENSOR, 0, 0, map, coords, 0};
            return at;
        }
        return parse_memory(p, s + 1, end - 1);
    }
    const int at = p.n_ops++;
    if (s[0] == '%' && s[1] == '%') {                  // a special register (%%name in the asm's C string)
        char name[32];
        size_t n = 0;
        for (const char* q = s + 2; q < end && n < sizeof name - 1; ++q) name[n++] = *q;
        name[n] = 0;
        for (int k = 0; k < S_COUNT; ++k)
            if (std::strcmp(name, SREG_NAMES[k]) == 0) {
                p.ops[at] = Operand{K_SREG, k, 0, 0, 0, 0};
                return at;
            }
        return -1;
    }
    if (s[0] == '%') {                                  // a C operand: %N
        char* stop;
        const long long k = std::strtoll(s + 1, &stop, 10);
        if (stop != end) return -1;
        p.ops[at] = Operand{K_C, k, 0, 0, 0, 0};
        return at;
    }
    if (end - s == 1 && *s == '_') {
        p.ops[at] = Operand{K_SINK, 0, 0, 0, 0, 0};
        return at;
    }
    if ((s[0] == '0') && end - s > 2 && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {   // 0fXXXXXXXX
        char* stop;
        const unsigned long long u = std::strtoull(s + 2, &stop, 16);
        if (stop != end) return -1;
        double v;
        if (s[1] == 'f' || s[1] == 'F') {
            float f;
            const unsigned b = (unsigned)u;
            std::memcpy(&f, &b, 4);
            v = f;
        } else {
            std::memcpy(&v, &u, 8);
        }
        p.ops[at] = Operand{K_FLOAT, 0, v, 0, 0, 0};
        return at;
    }
    if ((*s >= '0' && *s <= '9') || *s == '-') {
        char buf[64];
        const size_t n = (size_t)(end - s) < sizeof buf - 1 ? (size_t)(end - s) : sizeof buf - 1;
        std::memcpy(buf, s, n);
        buf[n] = 0;
        char* stop;
        const long long v = std::strtoll(buf, &stop, 0);
        if (*stop == 0) {
            p.ops[at] = Operand{K_IMM, v, 0, 0, 0, 0};
            return at;
        }
        const double d = std::strtod(buf, &stop);
        if (*stop != 0) return -1;
        p.ops[at] = Operand{K_FLOAT, 0, d, 0, 0, 0};
        return at;
    }
    for (int r = 0; r < p.n_regs; ++r)                // a register the text declared
        if ((size_t)(end - s) == std::strlen(p.reg_name[r]) && std::strncmp(s, p.reg_name[r], end - s) == 0) {
            p.ops[at] = Operand{K_REG, r, 0, 0, 0, 0};
            return at;
        }
    return -1;
}

GL_NOSAN inline bool fail_parse(Program& p, const char* what, const char* s, const char* end)
{
    std::snprintf(p.error, sizeof p.error, "%s: '%.*s'", what, (int)(end - s < 80 ? end - s : 80), s);
    return false;
}

// one statement (no `;`): a .reg declaration or an instruction with its predicate and operands
GL_NOSAN inline bool parse_statement(Program& p, const char* s, const char* end)
{
    s = skip(s, end);
    while (end > s && space(end[-1])) --end;
    if (s == end) return true;
    if (end - s > 4 && std::strncmp(s, ".reg", 4) == 0 && space(s[4])) {
        const char* q = skip(s + 4, end);
        while (q < end && !space(*q)) ++q;             // the type (.b32, .pred, ...)
        while (q < end) {
            q = skip(q, end);
            const char* name = q;
            while (q < end && *q != ',') ++q;
            const char* stop = q;
            while (stop > name && space(stop[-1])) --stop;
            if (stop == name || p.n_regs == MAX_REGS || stop - name >= 32)
                return fail_parse(p, "a .reg declaration", s, end);
            std::memcpy(p.reg_name[p.n_regs], name, stop - name);
            p.reg_name[p.n_regs++][stop - name] = 0;
            if (q < end) ++q;
        }
        return true;
    }
    if (p.n_instr == MAX_INSTR) return fail_parse(p, "too many instructions", s, end);
    Instr& in = p.instr[p.n_instr];
    in = Instr{};
    in.pred = -1;
    if (*s == '@') {
        const char* q = s + 1;
        if (q < end && *q == '!') { in.negated = true; ++q; }
        const char* name = q;
        while (q < end && !space(*q)) ++q;
        for (int r = 0; r < p.n_regs; ++r)
            if ((size_t)(q - name) == std::strlen(p.reg_name[r]) && std::strncmp(name, p.reg_name[r], q - name) == 0)
                in.pred = r;
        if (in.pred < 0) return fail_parse(p, "a predicate that is not declared", s, end);
        s = skip(q, end);
    }
    const char* op = s;
    while (s < end && !space(*s)) ++s;
    if (s - op >= (long)sizeof in.opcode) return fail_parse(p, "an instruction", op, end);
    std::memcpy(in.opcode, op, s - op);
    in.opcode[s - op] = 0;
    // the operands: split at commas outside braces and brackets
    int list[200], count = 0, depth = 0;
    const bool pair = std::strncmp(in.opcode, "elect.sync", 10) == 0;
    const char* q = s;
    for (const char* c = s; c <= end; ++c) {
        if (c < end && (*c == '{' || *c == '[')) ++depth;
        if (c < end && (*c == '}' || *c == ']')) --depth;
        // (elect.sync's first operand, d|p, is two: the leader's lane and whether this thread is it)
        if (c == end || ((*c == ',' || (*c == '|' && pair)) && depth == 0)) {
            if (skip(q, c) != c) {
                const int e = parse_operand(p, q, c);
                if (e < 0 || count == 200) return fail_parse(p, "an operand", q, c);
                list[count++] = e;
            }
            q = c + 1;
        }
    }
    if (p.n_ops + count > MAX_OPERANDS) return fail_parse(p, "too many operands", op, end);
    in.first = p.n_ops;
    in.count = count;
    for (int i = 0; i < count; ++i) p.ops[p.n_ops++] = p.ops[list[i]];
    ++p.n_instr;
    return true;
}

// The text (as the C string holds it: `%%` for a special register's `%`) into p; false (p.error) if it cannot
GL_NOSAN inline bool parse(Program& p, const char* text)
{
    p.text = text;
    p.n_instr = p.n_ops = p.n_regs = 0;
    p.error[0] = 0;
    const char* s = text;
    const char* end = text + std::strlen(text);
    while (s < end) {
        s = skip(s, end);
        if (s >= end) break;
        if (*s == '{' || *s == '}') { ++s; continue; }     // a scope: its .reg names are the statement's
        const char* stop = s;
        int depth = 0;
        while (stop < end && !(*stop == ';' && depth == 0)) {
            if (*stop == '{' || *stop == '[') ++depth;
            if (*stop == '}' || *stop == ']') --depth;
            if (depth < 0) break;                          // a scope's closing brace without a `;` before it
            ++stop;
        }
        if (!parse_statement(p, s, stop)) return false;
        s = stop < end && *stop == ';' ? stop + 1 : stop;
    }
    return true;
}

// The programs parsed so far in this process, by their text's address (a string literal: one per statement).
constexpr int CACHE = 256;
inline Program programs[CACHE];
inline int n_programs = 0;

GL_NOSAN inline Program* program_for(const char* text)
{
    const uintptr_t key = reinterpret_cast<uintptr_t>(text);
    for (int i = 0; i < n_programs; ++i)
        if (reinterpret_cast<uintptr_t>(programs[i].text) == key) return &programs[i];
    if (n_programs == CACHE) return nullptr;           // (run names it)
    Program* p = &programs[n_programs++];
    parse(*p, text);
    return p;
}

// ---- running it ---------------------------------------------------------------------------------------------
// n "+" operands from c[first] on that are one array's elements (an outs), read from and written to the array
// itself until an instruction other than wgmma names one of them (then its Op is filled in, and its bit of
// `filled` set; the others' Ops are never looked at)
struct Span {
    int first, count;
    unsigned char* base;
    unsigned char size;
    char kind;
    unsigned long long filled[4];
    GL_NOSAN bool has(long long k) const { return k >= first && k < first + count; }
    GL_NOSAN bool is_filled(long long k) const { return (filled[(k - first) >> 6] >> ((k - first) & 63)) & 1; }
    GL_NOSAN bool any_filled() const { return filled[0] | filled[1] | filled[2] | filled[3]; }
};
struct Thread {                        // one thread's run of one statement
    const Program* program;
    Op* c;                             // the C operands
    int n_c;
    Span* spans;
    int n_spans;
    unsigned long long regs[MAX_REGS];
    const char* file;
    int line;
    const void* pc;                    // the statement's place in the kernel (the memory check names its line)
};

[[noreturn]] GL_NOSAN inline void stop(const Thread& t, const char* what)
{
    char msg[1024];
    std::snprintf(msg, sizeof msg, "inline PTX at %s:%d: %s", t.file, t.line, what);
    kernel_stopped(msg);
}

GL_NOSAN inline const Operand& operand(const Thread& t, const Instr& in, int i) { return t.program->ops[in.first + i]; }

GL_NOSAN inline unsigned long long sreg(int which)
{
    const Fiber& f = g.fibers[g.cur];
    switch (which) {
        case S_LANEID: return f.linear & 31u;
        case S_WARPID: return f.linear >> 5;
        case S_TID_X: return f.tid.x;
        case S_TID_Y: return f.tid.y;
        case S_TID_Z: return f.tid.z;
        case S_NTID_X: return g.block_dim.x;
        case S_CTAID_X: return g.block_idx.x;
        case S_CTAID_Y: return g.block_idx.y;
        case S_CTAID_Z: return g.block_idx.z;
        case S_CLUSTER_CTARANK: return cluster_rank_now;      // (a launch without clusters: a cluster of one)
        case S_CLUSTER_NCTARANK: return cluster_blocks;
        default: return 0;
    }
}

// the output operand that is the array element at `at` (an outs's): with its bits when it is also read ("+")
GL_NOSAN inline Op element_op(unsigned char* at, unsigned char size, char mode, char kind)
{
    Op c{at, 0, size, mode, kind, 0};
    if (mode == '+') std::memcpy(&c.bits, at, size);
    return c;
}
// C operand k, its Op filled in from its array if it is an element of a Span not yet read
GL_NOSAN inline Op& c_operand(const Thread& t, long long k)
{
    Op& c = t.c[k];
    for (int s = 0; s < t.n_spans; ++s) {
        Span& r = t.spans[s];
        if (!r.has(k) || r.is_filled(k)) continue;
        c = element_op(r.base + (size_t)(k - r.first) * r.size, r.size, '+', r.kind);
        r.filled[(k - r.first) >> 6] |= 1ull << ((k - r.first) & 63);
    }
    return c;
}
// a scalar operand's bits
GL_NOSAN inline unsigned long long read(const Thread& t, const Operand& o)
{
    switch (o.kind) {
        case K_C:
            if (o.value >= t.n_c) stop(t, "an operand number past the statement's operands");
            return c_operand(t, o.value).bits;
        case K_REG: return t.regs[o.value];
        case K_IMM: return (unsigned long long)o.value;
        case K_FLOAT: {
            const float f = (float)o.real;
            unsigned u;
            std::memcpy(&u, &f, 4);
            return u;
        }
        case K_SREG: return sreg((int)o.value);
        default: stop(t, "an operand that is not a value where the instruction reads one");
    }
}
GL_NOSAN inline void write(Thread& t, const Operand& o, unsigned long long v)
{
    if (o.kind == K_SINK) return;
    if (o.kind == K_REG) { t.regs[o.value] = v; return; }
    if (o.kind != K_C || o.value >= t.n_c) stop(t, "a destination that is not a register");
    Op& c = c_operand(t, o.value);
    if (c.mode == 'i') stop(t, "a write to an input operand");
    c.bits = c.size < 8 ? v & ((1ull << (8 * c.size)) - 1) : v;
}
// a vector operand's elements (a scalar where the instruction takes a one-element vector)
GL_NOSAN inline int elements(const Thread& t, const Operand& o, const Operand** out, int most)
{
    if (o.kind != K_VEC) { out[0] = &o; return 1; }
    if (o.count > most) stop(t, "a vector with more elements than the instruction takes");
    for (int i = 0; i < o.count; ++i) out[i] = &t.program->ops[o.first + i];
    return o.count;
}

GL_NOSAN inline bool starts(const char* s, const char* prefix)
{ return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }
GL_NOSAN inline bool has(const char* s, const char* part) { return std::strstr(s, part) != nullptr; }

// ---- a warp's (or warpgroup's) instruction: every thread waits for the others, the last computes for all ------
// Each thread leaves a pointer to its own Lane (on its stack, alive while it waits) and the last to arrive fills in
// every thread's results; no thread reads another's Lane after the group goes on.
struct Lane {
    const Instr* instr;
    unsigned long long in[8];          // its registers for the instruction
    unsigned long long out[8];         // its results
    const unsigned char* row;          // ldmatrix: the row it addresses (lanes 0 .. 8 x - 1)
    float* acc;                        // wgmma: its accumulators' values when it issued
    float* const* dst;                 // wgmma: its accumulator operands' addresses (or null:)
    float* base;                       // wgmma: they are base[0 .. n_acc - 1], in order
    int n_acc;
    const void* extra;                 // wgmma: its view of the instruction's operands (a Wgmma)
};

GL_NOSAN __attribute__((noinline)) inline void group_together(Lane* mine, const Thread& t,
                                                              void (*compute)(Lane* const* lanes, unsigned count),
                                                              unsigned size)
{
    Fiber& me = g.fibers[g.cur];
    const unsigned base = me.linear & ~(size - 1);
    if (g.n - base < size) {
        char what[256];
        std::snprintf(what, sizeof what, "a %s instruction (.sync.aligned) in a %s of fewer than %u threads: the "
                      "block's size is not a multiple of %u", size == 32 ? "warp" : "warpgroup",
                      size == 32 ? "warp" : "warpgroup", size, size);
        stop(t, what);
    }
    me.state = AT_WARP_OP;
    me.op = OP_PTX;
    me.mask = 0xffffffffu;
    me.value = reinterpret_cast<uintptr_t>(mine);
    me.file = t.file;
    me.line = t.line;
    Fiber* group = g.fibers + base;
    bool all = true;
    for (unsigned l = 0; l < size; ++l) {
        const Fiber& f = group[l];
        if (f.state == EXITED) {
            if ((l & ~31u) == ((me.linear - base) & ~31u)) exited_lane(me, l & 31u);
            char what[256];
            std::snprintf(what, sizeof what, "a warpgroup instruction (.sync.aligned) that thread %u of the "
                          "warpgroup never reaches: it has exited", l);
            stop(t, what);
        }
        if (f.state != AT_WARP_OP || f.op != OP_PTX || f.line != t.line || (f.file != t.file && std::strcmp(f.file, t.file) != 0))
            all = false;
    }
    if (!all) {
        resolve_warp(me.linear & ~31u);
        run_next();
        return;
    }
    Lane* every[128];
    for (unsigned l = 0; l < size; ++l) every[l] = reinterpret_cast<Lane*>(group[l].value);
    compute(every, size);
    for (unsigned l = 0; l < size; ++l) group[l].state = RUNNABLE;
    for (unsigned w = base >> 5; w < (base + size) >> 5; ++w) ++g.warp_epoch[w & 31];
    // as warp_op: the next threads outside the group go on first, then the group's, lowest first
    for (unsigned k = size, i = (base + size) % g.n; k < g.n; ++k, i = i + 1 == g.n ? 0 : i + 1)
        if (g.fibers[i].state == RUNNABLE && (i < base || i >= base + size)) { switch_to(i); return; }
    if (base != g.cur) switch_to(base);
}
GL_NOSAN inline void warp_together(Lane* mine, const Thread& t, void (*compute)(Lane* const* lanes, unsigned count))
{
    group_together(mine, t, compute, 32);
}

// ---- mma.sync: D (16 x 8, FP32) = A (16 x k) B (k x 8) + C, from the lanes' fragments --------------------
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16" and "m16n8k8"): group g = lane / 4, t = lane % 4.
// m16n8k16 (two 16-bit values a register, the lower in the low half): a0 (g, 2t..2t+1), a1 (g+8, 2t..),
// a2 (g, 2t+8..), a3 (g+8, 2t+8..); b0 (k = 2t..2t+1, n = g), b1 (k = 2t+8.., n = g). m16n8k8 TF32 (one value a
// register): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k = t, n = g), b1 (k = t+4, n = g).
// C and D: c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1).
enum Precision { P_F16, P_BF16, P_TF32, P_E4M3, P_E5M2 };
// an FP8 value's bits as a float (exact): E4M3 (bias 7, no infinity, S.1111.111 NaN), E5M2 (bias 15, IEEE-like)
GL_NOSAN inline float fp8_bits_to_float(unsigned bits, bool e4m3)
{
    const unsigned mb = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, e = (bits & 0x7f) >> mb, m = bits & ((1u << mb) - 1);
    const float sign = bits & 0x80 ? -1.0f : 1.0f;
    if (e4m3 && (bits & 0x7f) == 0x7f) return NAN;
    if (!e4m3 && e == 31) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * std::ldexp((float)m, 1 - (int)bias - (int)mb);
    return sign * std::ldexp(1.0f + (float)m / (float)(1u << mb), (int)e - (int)bias);
}
GL_NOSAN inline float element(unsigned bits, Precision p)
{
    if (p == P_F16) return half_bits_to_float((unsigned short)bits);
    if (p == P_BF16) return bf16_bits_to_float((unsigned short)bits);
    if (p == P_E4M3 || p == P_E5M2) return fp8_bits_to_float(bits & 0xffu, p == P_E4M3);
    float f;
    std::memcpy(&f, &bits, 4);
    return gl_tf32_operand(f);
}
GL_NOSAN inline Precision mma_precision(const char* opcode)
{
    return has(opcode, ".tf32") ? P_TF32 : has(opcode, ".bf16") ? P_BF16 : has(opcode, ".e4m3") ? P_E4M3
         : has(opcode, ".e5m2") ? P_E5M2 : P_F16;
}
// an operand element's bytes
GL_NOSAN inline unsigned element_size(Precision p)
{
    return p == P_TF32 ? 4 : p == P_E4M3 || p == P_E5M2 ? 1 : 2;
}

// rows r0 .. r0 + 15 of A (16 x k) from lane l's four registers, in mma.sync's fragment layout (wgmma's A from
// registers is four of these, one a warp)
GL_NOSAN inline void a_fragment(float (*A)[16], int r0, int l, const unsigned* in, Precision p)
{
    const int gr = r0 + l / 4, t = l % 4;
    if (p == P_TF32) {
        A[gr][t] = element(in[0], p);
        A[gr + 8][t] = element(in[1], p);
        A[gr][t + 4] = element(in[2], p);
        A[gr + 8][t + 4] = element(in[3], p);
        return;
    }
    for (int h = 0; h < 2; ++h) {
        A[gr][2 * t + h] = element((in[0] >> (16 * h)) & 0xffffu, p);
        A[gr + 8][2 * t + h] = element((in[1] >> (16 * h)) & 0xffffu, p);
        A[gr][2 * t + 8 + h] = element((in[2] >> (16 * h)) & 0xffffu, p);
        A[gr + 8][2 * t + 8 + h] = element((in[3] >> (16 * h)) & 0xffffu, p);
    }
}

GL_NOSAN inline void mma_compute(Lane* const* lanes, unsigned)
{
    const char* opcode = lanes[0]->instr->opcode;
    const Precision p = mma_precision(opcode);
    const int K = p == P_TF32 ? 8 : 16, G = p == P_TF32 ? GL_TC_GROUP_TF32 : GL_TC_GROUP_16BIT;
    float A[16][16], D[16][8];
    double B[16][8];
    for (int l = 0; l < 32; ++l) {
        const Lane& L = *lanes[l];
        const int gr = l / 4, t = l % 4;
        const unsigned a[4] = {(unsigned)L.in[0], (unsigned)L.in[1], (unsigned)L.in[2], (unsigned)L.in[3]};
        a_fragment(A, 0, l, a, p);
        if (p == P_TF32) {
            B[t][gr] = element((unsigned)L.in[4], p);
            B[t + 4][gr] = element((unsigned)L.in[5], p);
        } else {
            for (int h = 0; h < 2; ++h) {
                B[2 * t + h][gr] = element((unsigned)(L.in[4] >> (16 * h)) & 0xffffu, p);
                B[2 * t + 8 + h][gr] = element((unsigned)(L.in[5] >> (16 * h)) & 0xffffu, p);
            }
        }
    }
    // C: lanes carry it in out[0..3] on the way in (see run_mma)
    for (int l = 0; l < 32; ++l) {
        const int gr = l / 4, t = l % 4;
        float c[4];
        for (int r = 0; r < 4; ++r) std::memcpy(&c[r], &lanes[l]->out[r], 4);
        D[gr][2 * t] = c[0];
        D[gr][2 * t + 1] = c[1];
        D[gr + 8][2 * t] = c[2];
        D[gr + 8][2 * t + 1] = c[3];
    }
    gl_tc_matmul(&D[0][0], 8, &A[0][0], 16, &B[0][0], 8, 16, 8, K, G);
    for (int l = 0; l < 32; ++l) {
        const int gr = l / 4, t = l % 4;
        const float d[4] = {D[gr][2 * t], D[gr][2 * t + 1], D[gr + 8][2 * t], D[gr + 8][2 * t + 1]};
        for (int r = 0; r < 4; ++r) {
            unsigned u;
            std::memcpy(&u, &d[r], 4);
            lanes[l]->out[r] = u;
        }
    }
}

GL_NOSAN inline void run_mma(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    const bool k16 = has(op, ".m16n8k16."), k8 = has(op, ".m16n8k8.");
    const Precision p = mma_precision(op);
    const bool shape_ok = (k16 && p != P_TF32 && has(op, ".f16.f16.f32") != has(op, ".bf16.bf16.f32")) ||
                          (k8 && has(op, ".tf32.tf32.f32"));
    if (!starts(op, "mma.sync.aligned.") || !has(op, ".row.col.f32.") || !shape_ok || in.count != 4)
        stop(t, "an mma.sync form the emulator does not run (it runs m16n8k16 .row.col with FP16 or BF16 operands "
                "and m16n8k8 .row.col with TF32 operands, FP32 accumulators)");
    const Operand* d[8];
    const Operand* a[8];
    const Operand* b[8];
    const Operand* c[8];
    if (elements(t, operand(t, in, 0), d, 8) != 4 || elements(t, operand(t, in, 1), a, 8) != 4 ||
        elements(t, operand(t, in, 2), b, 8) != 2 || elements(t, operand(t, in, 3), c, 8) != 4)
        stop(t, "mma.sync takes {4 registers} of D, {4} of A, {2} of B and {4} of C for these shapes");
    Lane mine{};
    mine.instr = &in;
    for (int i = 0; i < 4; ++i) mine.in[i] = read(t, *a[i]);
    for (int i = 0; i < 2; ++i) mine.in[4 + i] = read(t, *b[i]);
    for (int i = 0; i < 4; ++i) mine.out[i] = read(t, *c[i]) & 0xffffffffu;
    warp_together(&mine, t, mma_compute);
    for (int i = 0; i < 4; ++i) write(t, *d[i], mine.out[i]);
}

// ---- ldmatrix: x 8 x 8 matrices of 16-bit values from shared memory, lane 8i + r giving row r of matrix i --
// Lane l receives, of matrix i in its register i, row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 (the lower
// column in the low half); with .trans, column l / 4, rows 2 (l % 4) and 2 (l % 4) + 1.
GL_NOSAN inline void ldmatrix_compute(Lane* const* lanes, unsigned)
{
    const char* op = lanes[0]->instr->opcode;
    const int x = has(op, ".x4") ? 4 : has(op, ".x2") ? 2 : 1;
    const bool trans = has(op, ".trans");
    unsigned short m[4][8][8];
    for (int i = 0; i < x; ++i)
        for (int r = 0; r < 8; ++r) std::memcpy(m[i][r], lanes[8 * i + r]->row, 16);
    for (int l = 0; l < 32; ++l)
        for (int i = 0; i < x; ++i) {
            const int a = l / 4, b = 2 * (l % 4);
            const unsigned lo = trans ? m[i][b][a] : m[i][a][b], hi = trans ? m[i][b + 1][a] : m[i][a][b + 1];
            lanes[l]->out[i] = lo | (hi << 16);
        }
}

// elect.sync d|p, membermask: one leader among the warp's lanes, the lowest in the mask (the whole warp: every lane
// waits for the others, as .sync asks); d its lane, p whether this thread is it
GL_NOSAN inline void elect_compute(Lane* const* lanes, unsigned)
{
    for (unsigned l = 0; l < 32; ++l) {
        lanes[l]->out[0] = 0;
        lanes[l]->out[1] = l == 0;
    }
}
GL_NOSAN inline void run_elect(Thread& t, const Instr& in)
{
    if (!starts(in.opcode, "elect.sync") || in.count != 3)
        stop(t, "elect.sync takes d|p (a register or _, and a predicate) and a member mask");
    if ((read(t, operand(t, in, 2)) & 0xffffffffu) != 0xffffffffu)
        stop(t, "an elect.sync whose member mask is not the whole warp (the emulator runs 0xffffffff)");
    Lane mine{};
    mine.instr = &in;
    warp_together(&mine, t, elect_compute);
    write(t, operand(t, in, 0), mine.out[0]);
    write(t, operand(t, in, 1), mine.out[1]);
}

GL_NOSAN inline void run_ldmatrix(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    if (!starts(op, "ldmatrix.sync.aligned.m8n8.") || !has(op, ".b16") || !has(op, ".shared") || in.count != 2)
        stop(t, "an ldmatrix form the emulator does not run (it runs .m8n8 .x1/.x2/.x4 [.trans] .shared .b16)");
    const int x = has(op, ".x4") ? 4 : has(op, ".x2") ? 2 : has(op, ".x1") ? 1 : 0;
    if (!x) stop(t, "ldmatrix without .x1, .x2 or .x4");
    const Operand* d[8];
    if (elements(t, operand(t, in, 0), d, 8) != x) stop(t, "ldmatrix's destination has one register per matrix");
    const Operand& addr = operand(t, in, 1);
    if (addr.kind != K_MEM) stop(t, "ldmatrix reads from an address in brackets");
    Lane mine{};
    mine.instr = &in;
    const unsigned lane = g.fibers[g.cur].linear & 31u;
    if (lane < 8u * x) {                               // this lane gives a row: its own read, checked as its own
        const unsigned long long w = read(t, t.program->ops[addr.first]) + addr.offset;
        if (w % 16) stop(t, "an ldmatrix row address that is not 16-byte aligned");
        const unsigned char* row = static_cast<const unsigned char*>(from_shared_window((size_t)(unsigned)w));
        if (!in_shared(reinterpret_cast<uintptr_t>(row)) || !in_shared(reinterpret_cast<uintptr_t>(row) + 15))
            stop(t, "an ldmatrix row address outside shared memory");
        shadow_check(reinterpret_cast<uintptr_t>(row), 16, false, t.pc);
        mine.row = row;
    }
    warp_together(&mine, t, ldmatrix_compute);
    for (int i = 0; i < x; ++i) write(t, *d[i], mine.out[i]);
}

// ---- scalar instructions: moves, comparisons, selections, conversions; fences (the emulator's memory is
// ---- sequentially consistent: a fence orders nothing that is not ordered already) -----------------------------
GL_NOSAN inline long long as_signed(unsigned long long v, const char* op)
{
    return has(op, ".s64") || has(op, ".u64") || has(op, ".b64") ? (long long)v : (long long)(int)(unsigned)v;
}

GL_NOSAN inline void run_scalar(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    if (starts(op, "mov.")) {
        if (in.count != 2) stop(t, "mov takes a destination and a source");
        write(t, operand(t, in, 0), read(t, operand(t, in, 1)));
        return;
    }
    if (starts(op, "setp.")) {                         // setp.<cmp>.<type> p, a, b
        if (in.count != 3) stop(t, "setp takes a predicate and two values");
        const unsigned long long a = read(t, operand(t, in, 1)), b = read(t, operand(t, in, 2));
        if (has(op, ".f32") || has(op, ".f64")) {      // floats: as numbers (a NaN compares false but for ne)
            double x, y;
            if (has(op, ".f64")) {
                std::memcpy(&x, &a, 8);
                std::memcpy(&y, &b, 8);
            } else {
                const unsigned ua = (unsigned)a, ub = (unsigned)b;
                float fx, fy;
                std::memcpy(&fx, &ua, 4);
                std::memcpy(&fy, &ub, 4);
                x = fx;
                y = fy;
            }
            bool r;
            if (has(op, ".eq.")) r = x == y;
            else if (has(op, ".ne.")) r = x != y;
            else if (has(op, ".lt.")) r = x < y;
            else if (has(op, ".le.")) r = x <= y;
            else if (has(op, ".gt.")) r = x > y;
            else if (has(op, ".ge.")) r = x >= y;
            else stop(t, "a setp comparison of floats the emulator does not run (it runs eq, ne, lt, le, gt, ge)");
            write(t, operand(t, in, 0), r);
            return;
        }
        const bool is_signed = has(op, ".s32") || has(op, ".s64");
        const long long sa = as_signed(a, op), sb = as_signed(b, op);
        const unsigned long long ua = has(op, "64") ? a : (unsigned)a, ub = has(op, "64") ? b : (unsigned)b;
        bool r;
        if (has(op, ".eq.")) r = ua == ub;
        else if (has(op, ".ne.")) r = ua != ub;
        else if (has(op, ".lt.")) r = is_signed ? sa < sb : ua < ub;
        else if (has(op, ".le.")) r = is_signed ? sa <= sb : ua <= ub;
        else if (has(op, ".gt.")) r = is_signed ? sa > sb : ua > ub;
        else if (has(op, ".ge.")) r = is_signed ? sa >= sb : ua >= ub;
        else stop(t, "a setp comparison the emulator does not run (it runs eq, ne, lt, le, gt, ge on integers)");
        write(t, operand(t, in, 0), r);
        return;
    }
    if (starts(op, "selp.")) {                         // selp.<type> d, a, b, p
        if (in.count != 4) stop(t, "selp takes a destination, two values and a predicate");
        const bool p = read(t, operand(t, in, 3)) != 0;
        write(t, operand(t, in, 0), read(t, operand(t, in, p ? 1 : 2)));
        return;
    }
    if (std::strcmp(op, "cvt.rna.tf32.f32") == 0) {   // to TF32's 10 mantissa bits, to nearest, ties away
        unsigned u = (unsigned)read(t, operand(t, in, 1));
        if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
        write(t, operand(t, in, 0), u);
        return;
    }
    stop(t, "an instruction the emulator does not run");
}

GL_NOSAN inline bool is_fence(const char* op)
{
    return starts(op, "fence.") || starts(op, "membar.");
}

// setmaxnreg: no effect here; its operand is checked as ptxas and the GPU check it
GL_NOSAN inline void run_setmaxnreg(Thread& t, const Instr& in)
{
    if (!(has(in.opcode, ".inc.") || has(in.opcode, ".dec.")) || !has(in.opcode, ".sync.aligned") || in.count != 1)
        stop(t, "setmaxnreg is setmaxnreg.inc or .dec .sync.aligned.u32 with a count");
    const Operand& n = operand(t, in, 0);
    if (n.kind != K_IMM && n.kind != K_C) stop(t, "setmaxnreg's count is a constant");
    const unsigned long long count = read(t, n);
    if (count < 24 || count > 256 || count % 8) {
        char what[160];
        std::snprintf(what, sizeof what, "setmaxnreg with %llu registers: the count must be a multiple of 8 from 24 "
                      "to 256", count);
        stop(t, what);
    }
}

// ---- shared-memory addresses --------------------------------------------------------------------------------
// the memory of n bytes of the shared window at w when they lie in one of the block's arrays, or in the dynamic
// shared memory its launch gave; nullptr otherwise (then each address is looked at on its own)
GL_NOSAN inline unsigned char* shared_region(unsigned long long w, unsigned long long n)
{
    unsigned char* p = static_cast<unsigned char*>(from_shared_window((size_t)w));
    return n && in_block_shared(p, (size_t)n) ? p : nullptr;
}

// the thread (its linear index + 1) whose ordinary store to n bytes of shared memory at p the asynchronous proxy may
// not see yet: it has run no fence.proxy.async since; 0 if none
GL_NOSAN inline unsigned unfenced_writer(const void* p, size_t n)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const long long first = proxy_granule(a), last = proxy_granule(a + n - 1);
    for (long long k = first; k >= 0 && k <= last; ++k) {
        const unsigned w = proxy_writer[k];
        if (w && proxy_fences[w - 1] == proxy_fence_at[k]) return w;
    }
    return 0;
}
GL_NOSAN inline void proxy_wrote(const void* p, size_t n)       // the copy engine wrote them (a TMA load)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const long long first = proxy_granule(a), last = proxy_granule(a + n - 1);
    for (long long k = first; k >= 0 && k <= last; ++k) proxy_writer[k] = 0;
}
GL_NOSAN inline int name_writer(char* out, size_t size, unsigned w)
{
    const Fiber& f = g.fibers[w - 1];
    return std::snprintf(out, size, "thread (%u,%u,%u) wrote it with an ordinary store and has run no "
                         "fence.proxy.async since (the async proxy may not see the store)", f.tid.x, f.tid.y, f.tid.z);
}

// a shared-window address (what __cvta_generic_to_shared gave) of n bytes, aligned to `align`, checked
GL_NOSAN inline unsigned char* shared_at(const Thread& t, unsigned long long w, size_t n, size_t align,
                                        const char* what)
{
    unsigned char* p = shared_region((unsigned)w, n);
    char msg[256];
    if (w % align) {
        std::snprintf(msg, sizeof msg, "%s at shared address %llu, which is not %zu-byte aligned", what, w, align);
        stop(t, msg);
    }
    if (!p) {
        std::snprintf(msg, sizeof msg, "%s at shared address %llu (%zu bytes), outside the block's shared arrays and "
                      "the dynamic shared memory its launch gave", what, w, n);
        stop(t, msg);
    }
    return p;
}
// A shared::cluster address (mapa): the shared-window address of the block of rank r of the cluster, as
// (r + 1) << 24 | address (a block's own addresses are its window addresses, as mapa gives them). With `cluster`
// (an instruction on .shared::cluster) sets rank to the block it names and gives its window address; without it
// an address of another block is refused by name.
constexpr unsigned CLUSTER_SHIFT = 24;
GL_NOSAN inline unsigned long long cluster_address(const Thread& t, unsigned long long w, bool cluster,
                                                   unsigned& rank, const char* what)
{
    rank = cluster_rank_now;
    const unsigned long long tag = w >> CLUSTER_SHIFT;
    if (tag == 0) return w;
    char msg[300];
    if (tag > cluster_blocks) {
        std::snprintf(msg, sizeof msg, "%s at shared address 0x%llx, which is no block's of its cluster of %u "
                      "(not a shared-window address, nor one mapa gave)", what, w, cluster_blocks);
        stop(t, msg);
    }
    if (!cluster) {
        std::snprintf(msg, sizeof msg, "%s (.shared::cta) at another block's shared::cluster address (mapa gave "
                      "it for the block of rank %llu): such addresses take .shared::cluster", what, tag - 1);
        stop(t, msg);
    }
    rank = (unsigned)(tag - 1);
    if (rank != cluster_rank_now && cluster_block[rank].ended) {
        std::snprintf(msg, sizeof msg, "%s in the shared memory of block (%u,%u,%u), rank %u of the cluster, whose "
                      "threads have all exited (a cluster barrier before the exit keeps a block's memory there)",
                      what, cluster_block[rank].block_idx.x, cluster_block[rank].block_idx.y,
                      cluster_block[rank].block_idx.z, rank);
        stop(t, msg);
    }
    return w & ((1ull << CLUSTER_SHIFT) - 1);
}

// mapa.shared::cluster.u32 d, a, r: a (a shared-window address of this block) in the block of rank r
GL_NOSAN inline void run_mapa(Thread& t, const Instr& in)
{
    if (!starts(in.opcode, "mapa.shared::cluster.u32") || in.count != 3)
        stop(t, "a mapa the emulator does not run (it runs mapa.shared::cluster.u32 on shared-window addresses)");
    unsigned long long a = read(t, operand(t, in, 1)) & 0xffffffffu;
    const unsigned long long r = read(t, operand(t, in, 2)) & 0xffffffffu;
    if (a >> CLUSTER_SHIFT == cluster_rank_now + 1ull) a &= (1ull << CLUSTER_SHIFT) - 1;    // (its own, as mapa gave it)
    if (a >> CLUSTER_SHIFT || !shared_region((unsigned)a, 1)) {
        char msg[200];
        std::snprintf(msg, sizeof msg, "mapa of 0x%llx, which is not an address in this block's shared memory (a "
                      "shared-window address: __cvta_generic_to_shared of a __shared__ variable)", a);
        stop(t, msg);
    }
    if (r >= cluster_blocks) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "mapa to the block of rank %llu of a cluster of %u", r, cluster_blocks);
        stop(t, msg);
    }
    write(t, operand(t, in, 0), r == cluster_rank_now ? a : a | (r + 1) << CLUSTER_SHIFT);
}

GL_NOSAN inline unsigned long long address_of(const Thread& t, const Operand& o)
{
    if (o.kind != K_MEM) stop(t, "an address in brackets where the instruction takes one");
    return read(t, t.program->ops[o.first]) + o.offset;
}

// ---- loads and stores: ld / st, scalar or .v2 / .v4, to shared memory (a window address) or global memory (a
// ---- generic one); .acquire / .release order nothing more here (the emulator's memory is sequentially consistent)
GL_NOSAN inline unsigned element_bytes(const char* op)
{
    if (has(op, ".b64") || has(op, ".u64") || has(op, ".s64") || has(op, ".f64")) return 8;
    if (has(op, ".b16") || has(op, ".u16") || has(op, ".s16") || has(op, ".f16")) return 2;
    if (has(op, ".b8") || has(op, ".u8") || has(op, ".s8")) return 1;
    return 4;
}
GL_NOSAN inline void run_memory(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    const bool load = op[0] == 'l';
    if (!in.bytes) {                                   // (read once: the same for every thread and every run)
        if (in.count != 2) stop(t, load ? "ld takes a destination and an address" : "st takes an address and a value");
        const bool shared = has(op, ".shared"), global = has(op, ".global");
        if (!shared && !global) stop(t, "an ld or st the emulator does not run (it runs .shared and .global ones)");
        in.shared = shared;
        in.cluster = has(op, ".shared::cluster");
        in.lanes = has(op, ".v4") ? 4 : has(op, ".v2") ? 2 : 1;
        in.bytes = (unsigned char)element_bytes(op);
    }
    const bool shared = in.shared;
    const unsigned es = in.bytes, lanes = in.lanes;
    const Operand& at = operand(t, in, load ? 1 : 0);
    const Operand& value = operand(t, in, load ? 0 : 1);
    const Operand* v[4];
    if (elements(t, value, v, 4) != (int)lanes) stop(t, "a vector ld or st with as many registers as its .v2 or .v4");
    unsigned rank = cluster_rank_now;
    const char* what = load ? "a shared load" : "a shared store";
    const unsigned long long a = shared ? cluster_address(t, address_of(t, at), in.cluster, rank, what)
                                        : address_of(t, at);
    unsigned char* p = shared ? shared_at(t, a, es * lanes, es * lanes, what) : reinterpret_cast<unsigned char*>(a);
    if (rank != cluster_rank_now) {                    // distributed shared memory: another block's, aside
        p = cluster_memory(rank, p, es * lanes);
        if (!p) stop(t, "a load or store of another block's shared memory outside its arrays");
    }
    if (!shared && a % (es * lanes)) stop(t, "a global ld or st at an address not aligned to its size");
    if (rank == cluster_rank_now) shadow_check(reinterpret_cast<uintptr_t>(p), es * lanes, !load, t.pc);
    for (unsigned i = 0; i < lanes; ++i) {
        if (load) {
            unsigned long long bits = 0;
            std::memcpy(&bits, p + i * es, es);
            write(t, *v[i], bits);
        } else {
            const unsigned long long bits = read(t, *v[i]);
            std::memcpy(p + i * es, &bits, es);
        }
    }
}

// ---- cp.async (Ampere's copies to shared memory): each lands when its thread waits for its group, as late as a
// ---- GPU may land it (gemmlab_emu.h's asynchronous copies, which <cuda_pipeline.h>'s copies are too)
GL_NOSAN inline void run_cp_async(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    if (starts(op, "cp.async.commit_group")) return async_commit();
    if (starts(op, "cp.async.wait_group")) {
        if (in.count != 1) stop(t, "cp.async.wait_group takes the number of groups that may stay in flight");
        return async_wait(read(t, operand(t, in, 0)));
    }
    if (starts(op, "cp.async.wait_all")) {            // (commit_group, then wait_group 0)
        async_commit();
        return async_wait(0);
    }
    if (!(starts(op, "cp.async.ca.shared") || starts(op, "cp.async.cg.shared")) || !has(op, ".global"))
        stop(t, "a cp.async the emulator does not run (it runs cp.async.ca and .cg from global to shared memory, "
                "commit_group, wait_group and wait_all)");
    if (in.count != 3 && in.count != 4) stop(t, "cp.async takes a destination, a source, a size and an optional "
                                                "source size");
    const unsigned long long size = read(t, operand(t, in, 2));
    if (size != 4 && size != 8 && size != 16) stop(t, "cp.async copies 4, 8 or 16 bytes");
    if (has(op, ".cg") && size != 16) stop(t, "cp.async.cg copies 16 bytes");
    const unsigned long long given = in.count == 4 ? read(t, operand(t, in, 3)) : size;
    if (given > size) stop(t, "cp.async's source size is larger than its copy");
    unsigned char* dst = shared_at(t, address_of(t, operand(t, in, 0)), size, size, "a cp.async destination");
    const unsigned long long src = address_of(t, operand(t, in, 1));
    if (src % size) stop(t, "a cp.async source that is not aligned to its size");
    async_copy(dst, reinterpret_cast<const void*>(src), size, given, t.pc);    // (the bytes past `given`: zeros)
}

// ---- mbarriers --------------------------------------------------------------------------------------------
// The 64 bits of an mbarrier in shared memory, as the emulator keeps them: the arrivals still due this phase
// (bits 0-20), the arrivals a phase expects (21-41), the transaction bytes still due (42-62, two's complement:
// bytes may land before they are expected) and the phase's parity (63). A phase completes when its arrivals and
// its bytes are all in: the parity flips, the arrivals are due again, and every thread waiting on it goes on.
constexpr unsigned long long MB_FIELD = (1ull << 21) - 1;
GL_NOSAN inline unsigned long long mb_pending(unsigned long long w) { return w & MB_FIELD; }
GL_NOSAN inline unsigned long long mb_expected(unsigned long long w) { return (w >> 21) & MB_FIELD; }
GL_NOSAN inline long long mb_tx(unsigned long long w)
{
    const long long v = (long long)((w >> 42) & MB_FIELD);
    return v & (1ll << 20) ? v - (1ll << 21) : v;
}
GL_NOSAN inline unsigned mb_phase(unsigned long long w) { return (unsigned)(w >> 63); }
GL_NOSAN inline unsigned long long mb_word(unsigned long long pending, unsigned long long expected, long long tx,
                                           unsigned phase)
{
    return (pending & MB_FIELD) | ((expected & MB_FIELD) << 21) | (((unsigned long long)tx & MB_FIELD) << 42) |
           ((unsigned long long)phase << 63);
}

GL_NOSAN inline unsigned long long* mbarrier_at(const Thread& t, unsigned long long w)
{
    return reinterpret_cast<unsigned long long*>(shared_at(t, w, 8, 8, "an mbarrier"));
}

// every thread waiting on the barrier looks again (it goes on if its phase has completed, or lands the barrier's
// copies in flight); a change of the barrier's state also orders what came before it (racecheck, conservatively)
// (bar: the barrier's address as the block's code holds it; rank: the cluster's block whose barrier it is, whose
// threads look again, the running block's by default)
GL_NOSAN inline void mb_look_again(const unsigned long long* bar, unsigned rank = cluster_rank_now)
{
    Fiber* fibers = fibers_of(rank);
    for (unsigned i = 0; i < g.n; ++i)
        if (fibers[i].state == AT_MBARRIER && fibers[i].wait_on == bar) fibers[i].state = RUNNABLE;
}
GL_NOSAN inline void mb_wake(const unsigned long long* bar, unsigned rank)
{
    ++g.epoch;
#if defined(GL_EMU_RACECHECK)
    if (rank != cluster_rank_now) ++cluster_block[rank].epoch;    // (another block's barrier orders its accesses)
#endif
    mb_look_again(bar, rank);
}

// arrivals and transaction bytes on a barrier; completes its phase when both are in
GL_NOSAN inline void land(unsigned long long* bar);
// the word of the barrier at bar (as the block's code holds its address) of the cluster's block of rank r: where
// it lies while that block is aside
GL_NOSAN inline unsigned long long& mb_of(unsigned long long* bar, unsigned r)
{
    return *reinterpret_cast<unsigned long long*>(cluster_memory(r, reinterpret_cast<unsigned char*>(bar), 8));
}
GL_NOSAN inline void mb_update(const Thread& t, unsigned long long* bar, unsigned long long arrivals, long long bytes,
                               unsigned rank = cluster_rank_now)
{
    unsigned long long& word = mb_of(bar, rank);
    const unsigned long long w = word;
    long long tx = mb_tx(w) - bytes;
    if (arrivals > mb_pending(w)) {
        char what[200];
        std::snprintf(what, sizeof what, "more arrivals on an mbarrier than its phase expects (%llu a phase): its "
                      "count at init is too small, or a thread arrives twice", mb_expected(w));
        stop(t, what);
    }
    if (tx < -(1ll << 20) || tx >= (1ll << 20))
        stop(t, "an mbarrier's transaction count out of its range (2^20 bytes)");
    unsigned long long pending = mb_pending(w) - arrivals;
    unsigned phase = mb_phase(w);
    const bool completes = pending == 0 && tx == 0;
    if (completes) {
        pending = mb_expected(w);
        phase ^= 1u;
    }
    word = mb_word(pending, mb_expected(w), tx, phase);
    mb_wake(bar, rank);
}

GL_NOSAN inline void run_mbarrier(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    if (!has(op, ".shared") || has(op, ".shared::cluster")) {
        if (has(op, ".shared::cluster") && !has(op, ".try_wait") && !has(op, ".init")) {
            // an arrival on a barrier of the cluster: in a cluster of one block (a launch without clusters), its own
        } else {
            stop(t, "an mbarrier instruction on memory the emulator does not keep mbarriers in (it runs .shared::cta)");
        }
    }
    if (starts(op, "mbarrier.init.")) {                // mbarrier.init [a], count
        if (in.count != 2) stop(t, "mbarrier.init takes an address and a count");
        const unsigned long long count = read(t, operand(t, in, 1));
        if (count < 1 || count > MB_FIELD) stop(t, "mbarrier.init's count must be from 1 to 2^20 - 1");
        unsigned long long* bar = mbarrier_at(t, address_of(t, operand(t, in, 0)));
        *bar = mb_word(count, count, 0, 0);
        mb_wake(bar, cluster_rank_now);
        return;
    }
    if (starts(op, "mbarrier.arrive.")) {              // mbarrier.arrive[.expect_tx] state|_, [a][, bytes]
        const bool expect = has(op, ".expect_tx");
        if (in.count != (expect ? 3 : 2)) stop(t, "mbarrier.arrive takes a state (or _), an address and, with "
                                                  ".expect_tx, a byte count");
        unsigned rank = cluster_rank_now;              // (.shared::cluster: a barrier of any block of the cluster)
        const unsigned long long w = cluster_address(t, address_of(t, operand(t, in, 1)), has(op, ".shared::cluster"),
                                                     rank, "an mbarrier arrival");
        unsigned long long* bar = mbarrier_at(t, w);
        const unsigned long long before = mb_of(bar, rank);
        if (mb_expected(before) == 0) stop(t, "an arrival on an mbarrier that mbarrier.init has not set up");
        mb_update(t, bar, 1, expect ? -(long long)read(t, operand(t, in, 2)) : 0, rank);
        write(t, operand(t, in, 0), (unsigned long long)mb_phase(before));   // the state: the phase arrived on
        return;
    }
    if (starts(op, "mbarrier.try_wait.") || starts(op, "mbarrier.test_wait.")) {   // p, [a], parity
        if (!has(op, ".parity") || in.count != 3)
            stop(t, "the emulator runs mbarrier.try_wait.parity (and test_wait.parity) with a predicate, an address "
                    "and a parity");
        unsigned long long* bar = mbarrier_at(t, address_of(t, operand(t, in, 1)));
        const unsigned parity = (unsigned)read(t, operand(t, in, 2)) & 1u;
        if (mb_expected(*bar) == 0) stop(t, "a wait on an mbarrier that mbarrier.init has not set up");
        // the phase of that parity has completed once the current phase's parity differs from it; until then the
        // thread waits (a GPU's try_wait would return false and the kernel's loop ask again)
        if (starts(op, "mbarrier.test_wait.")) {      // test_wait: whether it has, now (copies in flight land)
            if (mb_phase(*bar) == parity) land(bar);
            write(t, operand(t, in, 0), mb_phase(*bar) != parity);
            return;
        }
        while (mb_phase(*bar) == parity) {
            land(bar);                                 // (the phase's copies in flight land when it is waited for)
            if (mb_phase(*bar) != parity) break;
            Fiber& me = g.fibers[g.cur];
            me.state = AT_MBARRIER;
            me.wait_on = bar;
            me.token = parity;
            me.file = t.file;
            me.line = t.line;
            resolve_warp(me.linear & ~31u);
            run_next();
        }
        write(t, operand(t, in, 0), 1);
        return;
    }
    stop(t, "an mbarrier instruction the emulator does not run (it runs init, arrive, arrive.expect_tx and "
            "try_wait.parity)");
}

// ---- the block's state in the PTX runtime: named barriers' counts, bulk and wgmma groups, copies and wgmma in
// ---- flight. A new block (block_serial) starts afresh; what a finished block left undone is checked then.
inline unsigned long long state_block = 0;
inline unsigned long long bulk_commits[1024];          // each thread's committed bulk groups (TMA stores)
inline unsigned long long wgmma_commits[1024];         // each thread's committed wgmma groups
GL_NOSAN inline void fresh_block();
GL_NOSAN inline void on_block() { if (state_block != block_serial) fresh_block(); }
GL_NOSAN inline unsigned me() { return g.fibers[g.cur].linear; }

// ---- named barriers: bar.sync / bar.arrive id, count ----------------------------------------------------------
// Barrier id (0-15) of the block: `count` threads (a multiple of 32) arrive, those with bar.sync wait for the rest.
struct Named {
    unsigned arrived, expected;
    unsigned long long generation;
};
inline Named named[16];                         // (a new block starts afresh: fresh_block)

GL_NOSAN inline void run_bar(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    const bool wait = starts(op, "bar.sync") || starts(op, "barrier.sync");
    if (!wait && !starts(op, "bar.arrive") && !starts(op, "barrier.arrive"))
        stop(t, "a bar instruction the emulator does not run");
    if (in.count < 1 || in.count > 2) stop(t, "bar.sync and bar.arrive take a barrier and a thread count");
    const unsigned id = (unsigned)read(t, operand(t, in, 0));
    const unsigned count = in.count == 2 ? (unsigned)read(t, operand(t, in, 1)) : g.n;
    if (id > 15) stop(t, "a named barrier's id must be from 0 to 15");
    if (count % 32 || count == 0 || count > g.n) {
        char what[200];
        std::snprintf(what, sizeof what, "a named barrier of %u threads: the count must be a multiple of 32, at most "
                      "the block's %u", count, g.n);
        stop(t, what);
    }
    on_block();
    Named& b = named[id];
    if (b.arrived && b.expected != count) {
        char what[200];
        std::snprintf(what, sizeof what, "named barrier %u used with %u threads while %u threads are arriving at it "
                      "with a count of %u", id, count, b.arrived, b.expected);
        stop(t, what);
    }
    b.expected = count;
    const unsigned long long mine = b.generation;
    if (++b.arrived == count) {                        // the last: the barrier opens for everyone waiting on it
        b.arrived = 0;
        ++b.generation;
        ++g.epoch;
        for (unsigned i = 0; i < g.n; ++i)
            if (g.fibers[i].state == AT_NAMED && g.fibers[i].wait_on == &b) g.fibers[i].state = RUNNABLE;
        return;
    }
    if (!wait) return;
    while (b.generation == mine) {
        Fiber& me = g.fibers[g.cur];
        me.state = AT_NAMED;
        me.wait_on = &b;
        me.token = id;
        me.file = t.file;
        me.line = t.line;
        resolve_warp(me.linear & ~31u);
        run_next();
    }
}

// ---- the cluster barrier: barrier.cluster.arrive and barrier.cluster.wait, every thread of every block of the
// ---- cluster (a launch without clusters: the block). A thread arrives, then waits for the phase it arrived in.
struct ClusterBarrier {
    unsigned long long phase;          // phases completed
    unsigned arrived;                  // threads arrived in the current one
    unsigned long long first_block;    // the cluster it counts for (its first block's number)
};
inline ClusterBarrier cluster_barrier;
inline unsigned long long cluster_arrival[MAX_CLUSTER][1024];   // the phase + 1 each thread arrived in (0: none)
GL_NOSAN inline unsigned cluster_threads_left()
{
    unsigned left = g.live;
    for (unsigned r = 0; r < cluster_blocks; ++r)
        if (r != cluster_rank_now) left += cluster_block[r].live;     // (an ended block's is 0)
    return left;
}
// the phase completes once every thread of the cluster still running has arrived: its waiters in every block go on
GL_NOSAN inline void cluster_barrier_open_if_due()
{
    ClusterBarrier& b = cluster_barrier;
    if (b.first_block != oldest_live_block || b.arrived == 0 || b.arrived < cluster_threads_left()) return;
    b.arrived = 0;
    ++b.phase;
    ++g.epoch;
    for (unsigned r = 0; r < cluster_blocks; ++r) {
        Fiber* fibers = fibers_of(r);
#if defined(GL_EMU_RACECHECK)
        if (r != cluster_rank_now) ++cluster_block[r].epoch;    // (a barrier for the blocks aside too)
#endif
        for (unsigned i = 0; i < g.n; ++i)
            if (fibers[i].state == AT_NAMED && fibers[i].wait_on == &b) fibers[i].state = RUNNABLE;
    }
}
// a thread exits: it no longer counts, its arrival in the phase with it, and the phase may be complete now
GL_NOSAN inline void cluster_barrier_exit()
{
    ClusterBarrier& b = cluster_barrier;
    if (b.first_block != oldest_live_block) return;
    unsigned long long& mine = cluster_arrival[cluster_rank_now][me()];
    if (mine == b.phase + 1) --b.arrived;
    mine = 0;
    cluster_barrier_open_if_due();
}
inline const bool exit_registered = (thread_exit_hook = cluster_barrier_exit, true);

GL_NOSAN inline void run_cluster_barrier(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    const bool arrive = starts(op, "barrier.cluster.arrive"), wait = starts(op, "barrier.cluster.wait");
    if ((!arrive && !wait) || in.count != 0)
        stop(t, "a cluster barrier the emulator does not run (it runs barrier.cluster.arrive and barrier.cluster.wait, "
                "with .release, .relaxed, .acquire and .aligned)");
    ClusterBarrier& b = cluster_barrier;
    if (b.first_block != oldest_live_block) {          // a new cluster: its barrier starts afresh
        b = ClusterBarrier{0, 0, oldest_live_block};
        std::memset(cluster_arrival, 0, sizeof cluster_arrival);
    }
    unsigned long long& mine = cluster_arrival[cluster_rank_now][me()];
    if (arrive) {
        if (mine) stop(t, "a second barrier.cluster.arrive before this thread's barrier.cluster.wait");
        mine = b.phase + 1;
        ++b.arrived;
        cluster_barrier_open_if_due();
        return;
    }
    if (!mine) stop(t, "a barrier.cluster.wait with no barrier.cluster.arrive of this thread before it");
    while (b.phase < mine) {
        Fiber& f = g.fibers[g.cur];
        f.state = AT_NAMED;
        f.wait_on = &b;
        f.token = mine - 1;
        f.file = t.file;
        f.line = t.line;
        resolve_warp(f.linear & ~31u);
        run_next();
    }
    mine = 0;
}

// The PTX runtime's state of a block (its groups, named barriers and the block it was set up for), put aside while
// another block of its cluster runs (cluster_state_hook)
struct BlockState {
    unsigned long long state_block;
    unsigned long long bulk[1024], wgmma[1024];
    Named named[16];
};
inline BlockState blocks_aside[MAX_CLUSTER];
GL_NOSAN inline void cluster_state(unsigned r, bool aside)
{
    BlockState& b = blocks_aside[r];
    keep(state_block, b.state_block, aside);
    keep(bulk_commits, b.bulk, g.n * sizeof *bulk_commits, aside);
    keep(wgmma_commits, b.wgmma, g.n * sizeof *wgmma_commits, aside);
    keep(named, b.named, aside);
}
inline const bool cluster_state_registered = (cluster_state_hook = cluster_state, true);

// ---- TMA: tensor maps and the bulk tensor copies ---------------------------------------------------------------
// A tensor map as gemmlab.tma encodes it for the emulator, in the 128 bytes of a CUtensorMap: the same arguments
// that cuTensorMapEncodeTiled takes on a GPU (the matrix, its sizes and row stride, the box, the swizzle, zeros
// outside), readable here. launch.py puts the launch's copy of the matrix in `address`.
struct TensorMap {
    unsigned long long magic;
    unsigned long long address;        // the matrix's first element
    unsigned long long id;             // the host array it describes (launch.py's key)
    unsigned long long dims[2];        // elements along the contiguous dimension, then rows
    unsigned long long stride;         // bytes from one row to the next
    unsigned box[2];                   // the box's elements along each
    unsigned elem_bytes;
    unsigned swizzle;                  // 0 none, 1 32-byte, 2 64-byte, 3 128-byte
    unsigned rank;
    unsigned oob_zero;                 // 1: zeros outside the matrix
    unsigned long long pad[7];
};
static_assert(sizeof(TensorMap) == 128, "a tensor map is 128 bytes");
constexpr unsigned long long TMAP_MAGIC = 0x31504d54454d4c47ull;      // "GLMETMP1"

// The swizzle TMA writes and wgmma reads: within each 1024, 512 or 256 bytes of shared memory, the 16-byte chunk
// of a 128-, 64- or 32-byte row is XORed with the row's index in the atom (address bits 4-6 with bits 7-9, 4-5 with
// 7-8, 4 with 7)
GL_NOSAN inline unsigned long long swizzled(unsigned long long a, unsigned mode)
{
    if (mode == 0) return a;
    const unsigned long long mask = mode == 3 ? 7 : mode == 2 ? 3 : 1;
    return a ^ (((a >> 7) & mask) << 4);
}
// the swizzle mode of a TMA map (1 32 B, 2 64 B, 3 128 B) as wgmma's descriptor numbers them (3, 2, 1)
GL_NOSAN inline unsigned span_of(unsigned map_mode)
{
    return map_mode == 3 ? 128 : map_mode == 2 ? 64 : map_mode == 1 ? 32 : 16;
}

GL_NOSAN inline const TensorMap& tensor_map(const Thread& t, const Operand& o)
{
    if (o.kind != K_TENSOR) stop(t, "a tensor operand [map, {coordinates}] where the copy takes one");
    const TensorMap* m = reinterpret_cast<const TensorMap*>(read(t, t.program->ops[o.first]));
    if (reinterpret_cast<uintptr_t>(m) % 64) stop(t, "a tensor map that is not 64-byte aligned");
    if (m->magic != TMAP_MAGIC)
        stop(t, "a tensor map that gemmlab.tma did not make for the emulator (a map the GPU's driver encoded, or "
                "memory that holds no map)");
    if (m->rank != 2) stop(t, "a tensor map of a rank other than 2 (the emulator runs 2-D maps)");
    if (m->address == 0) stop(t, "a tensor map whose matrix is not among the launch's arrays");
    return *m;
}
GL_NOSAN inline void coordinates(const Thread& t, const Operand& o, long long (&c)[2])
{
    const Operand* v[8];
    if (elements(t, t.program->ops[o.count], v, 8) != 2) stop(t, "a 2-D copy takes two coordinates");
    for (int i = 0; i < 2; ++i) c[i] = (long long)(int)(unsigned)read(t, *v[i]);
}

// the box at (c0, c1) between global memory and shared memory at w (the swizzled box, rows of box[0] elements);
// outside the matrix a load reads zeros and a store writes nothing; add: a store adds FP32 values to what is there
GL_NOSAN inline unsigned box_bytes(const TensorMap& m) { return m.box[0] * m.elem_bytes * m.box[1]; }
GL_NOSAN inline void box_check(const Thread& t, const TensorMap& m, unsigned long long w, bool load)
{
    const unsigned pitch = m.box[0] * m.elem_bytes;
    if (m.box[0] == 0 || m.box[1] == 0 || m.box[0] > 256 || m.box[1] > 256)
        stop(t, "a tensor map whose box is not 1 to 256 elements along each dimension");
    if (pitch % 16) stop(t, "a tensor map whose box rows are not a multiple of 16 bytes");
    if (m.swizzle && pitch > span_of(m.swizzle)) stop(t, "a swizzled box whose rows are longer than the swizzle span");
    shared_at(t, w, box_bytes(m), m.swizzle ? 128 : 16, load ? "a TMA load's destination" : "a TMA store's source");
}
GL_NOSAN inline void box_copy(const Thread& t, const TensorMap& m, const long long (&c)[2], unsigned long long w,
                              bool load, bool add)
{
    const unsigned es = m.elem_bytes, pitch = m.box[0] * es, per = 16 / es;
    unsigned char* const base = shared_region(w, box_bytes(m));      // (box_check at issue: it lies in one array)
    for (unsigned r = 0; r < m.box[1]; ++r) {
        const long long row = c[1] + r;
        const bool row_inside = row >= 0 && (unsigned long long)row < m.dims[1];
        for (unsigned k = 0; k < pitch; k += 16) {   // 16 bytes at a time, where the swizzle puts them
            const unsigned long long off = swizzled(w + (unsigned long long)r * pitch + k, m.swizzle) - w;
            unsigned char* s = off < box_bytes(m) ? base + off
                               : static_cast<unsigned char*>(from_shared_window((size_t)(w + off)));
#if defined(GL_EMU_RACECHECK)
            shadow_check(reinterpret_cast<uintptr_t>(s), 16, load, t.pc);
#endif
            if (load && proxy_dirty) proxy_wrote(s, 16);
            const long long col = c[0] + k / es;
            unsigned char* gaddr = reinterpret_cast<unsigned char*>(m.address + (unsigned long long)row * m.stride +
                                                                    (unsigned long long)col * es);
            if (row_inside && col >= 0 && (unsigned long long)col + per <= m.dims[0] && !add) {   // all inside
                shadow_check(reinterpret_cast<uintptr_t>(gaddr), 16, !load, t.pc);
                if (load) std::memcpy(s, gaddr, 16);
                else std::memcpy(gaddr, s, 16);
                continue;
            }
            for (unsigned e = 0; e < per; ++e) {      // at the matrix's edge, or a reduction: element by element
                const bool inside = row_inside && col + e >= 0 && (unsigned long long)(col + e) < m.dims[0];
                unsigned char* g1 = gaddr + (unsigned long long)e * es;
                if (load) {
                    if (inside) {
                        shadow_check(reinterpret_cast<uintptr_t>(g1), es, false, t.pc);
                        std::memcpy(s + e * es, g1, es);
                    } else {
                        std::memset(s + e * es, 0, es);
                    }
                } else if (inside) {
                    shadow_check(reinterpret_cast<uintptr_t>(g1), es, true, t.pc);
                    if (add) {
                        float x, y;
                        std::memcpy(&x, g1, 4);
                        std::memcpy(&y, s + e * es, 4);
                        x += y;
                        std::memcpy(g1, &x, 4);
                    } else {
                        std::memcpy(g1, s + e * es, es);
                    }
                }
            }
        }
    }
}

// Copies in flight. A load's box lands when the phase of its mbarrier completes (the GPU's lands some time before:
// a thread that reads it before waiting on the barrier reads what was there, here always); a store reads shared
// memory when its thread waits for its bulk group (the latest a GPU may read it), or it is an error when its
// block ends first.
struct Copy {
    bool used, load, add;
    unsigned long long block, seq, group;
    unsigned thread;
    const unsigned long long* bar;
    TensorMap map;
    long long c[2];
    unsigned long long w;
    const char* file;
    int line;
    const void* pc;
};
constexpr int MAX_COPIES = 8192;                       // (2048 a block, for a cluster of up to 4 at once)
inline Copy copies[MAX_COPIES];
inline int copy_top = 0;                               // the block's copies lie below it (a try_wait looks at them)
inline unsigned long long copy_seq = 0;

GL_NOSAN inline void queue_copy(const Thread& t, const Copy& c, unsigned long long block = 0)
{
    on_block();
    block = block ? block : block_serial;              // (a multicast's copy for another block of the cluster)
    int mine = 0;
    for (int i = 0; i < copy_top; ++i) mine += copies[i].used && copies[i].block == block;
    if (mine == MAX_COPIES / 4) stop(t, "more than 2048 TMA copies in flight in one block");
    for (int i = 0; i <= copy_top && i < MAX_COPIES; ++i) {
        Copy& slot = copies[i];
        if (i == copy_top || !slot.used || slot.block < oldest_live_block) {
            copy_top += i == copy_top;
            slot = c;
            slot.used = true;
            slot.block = block;
            slot.seq = ++copy_seq;
            slot.file = t.file;
            slot.line = t.line;
            slot.pc = t.pc;
            return;
        }
    }
    stop(t, "more than 8192 TMA copies in flight in the blocks of one cluster");
}
GL_NOSAN inline void check_wgmma_overlap(const Thread& t, unsigned long long lo, unsigned long long hi);
GL_NOSAN inline void perform(Copy& c)
{
    Thread t{};
    t.file = c.file;
    t.line = c.line;
    t.pc = c.pc;
    c.used = false;
    if (c.load) check_wgmma_overlap(t, c.w, c.w + box_bytes(c.map));   // (issued before its operands landed?)
    const bool atomic = g.in_atomic;                   // the copy engine's accesses, not a thread's: they take no
    g.in_atomic = true;                                // turn among the warp's loads and stores (global_access)
    box_copy(t, c.map, c.c, c.w, c.load, c.add);
    g.in_atomic = atomic;
    if (c.load) mb_update(t, const_cast<unsigned long long*>(c.bar), 0, (long long)box_bytes(c.map));
}
// the block's copies that `which` selects, oldest first
template <class F>
GL_NOSAN inline void perform_all(F which)
{
    for (;;) {
        Copy* first = nullptr;
        for (int i = 0; i < copy_top; ++i) {
            Copy& c = copies[i];
            if (c.used && c.block == block_serial && which(c) && (!first || c.seq < first->seq)) first = &c;
        }
        if (!first) return;
        perform(*first);
    }
}
// the loads in flight on an mbarrier land, and count their bytes off it: when a thread waits on it (try_wait), the
// latest moment a kernel may rely on them
GL_NOSAN inline void land(unsigned long long* bar)
{
    perform_all([bar](const Copy& c) { return c.load && c.bar == bar; });
}

GL_NOSAN inline void run_bulk(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    on_block();
    if (std::strcmp(op, "cp.async.bulk.commit_group") == 0) {
        ++bulk_commits[me()];
        return;
    }
    if (starts(op, "cp.async.bulk.wait_group")) {        // .read or not: this thread's older groups are done
        if (in.count != 1) stop(t, "cp.async.bulk.wait_group takes the number of groups that may stay pending");
        const unsigned long long n = read(t, operand(t, in, 0)), mine = me(), done = bulk_commits[mine];
        if (done > n) perform_all([&](const Copy& c) { return !c.load && c.thread == mine && c.group < done - n; });
        return;
    }
    const bool reduce = starts(op, "cp.reduce.async.bulk.tensor.");
    if (!starts(op, "cp.async.bulk.tensor.2d.") && !(reduce && has(op, ".2d.")))
        stop(t, "a bulk copy the emulator does not run (it runs 2-D cp.async.bulk.tensor loads and stores and the "
                ".add reduction)");
    Copy c{};
    if (has(op, ".global.shared::")) {                 // a store (or reduction): [map, {c}], [src]
        if (reduce && !has(op, ".add")) stop(t, "a TMA reduction other than .add");
        if (!has(op, ".bulk_group")) stop(t, "a TMA store the emulator does not run (it runs .bulk_group ones)");
        if (in.count != 2) stop(t, "a TMA store takes a tensor and a shared-memory source");
        c.map = tensor_map(t, operand(t, in, 0));
        coordinates(t, operand(t, in, 0), c.c);
        c.w = address_of(t, operand(t, in, 1));
        box_check(t, c.map, c.w, false);
        if (reduce && c.map.elem_bytes != 4) stop(t, "a TMA reduce-add of elements other than FP32");
        if (const unsigned writer = unfenced_writer(from_shared_window((size_t)c.w), box_bytes(c.map))) {
            char what[400];
            const int used = std::snprintf(what, sizeof what, "a TMA store from shared address %llu: ", c.w);
            name_writer(what + used, sizeof what - used, writer);
            stop(t, what);
        }
        c.add = reduce;
        c.thread = me();
        c.group = bulk_commits[c.thread];
        queue_copy(t, c);
        return;
    }
    // a load: [dst], [map, {c}], [bar] (, mask with .multicast::cluster)
    if (!has(op, ".shared::cluster.global") || !has(op, ".mbarrier::complete_tx::bytes"))
        stop(t, "a TMA load the emulator does not run (it runs .shared::cluster.global.mbarrier::complete_tx::bytes)");
    const bool multicast = has(op, ".multicast::cluster");
    if (in.count != (multicast ? 4 : 3)) stop(t, "a TMA load takes a destination, a tensor and an mbarrier (and a "
                                                 "mask with .multicast::cluster)");
    const unsigned long long mask = multicast ? read(t, operand(t, in, 3)) & 0xffffu : 1ull << cluster_rank_now;
    if (mask == 0 || mask >> cluster_blocks) {
        char what[200];
        std::snprintf(what, sizeof what, "a multicast TMA load whose mask 0x%llx names %s of its cluster of %u", mask,
                      mask ? "a block outside" : "no block", cluster_blocks);
        stop(t, what);
    }
    c.map = tensor_map(t, operand(t, in, 1));
    coordinates(t, operand(t, in, 1), c.c);
    c.w = address_of(t, operand(t, in, 0));
    box_check(t, c.map, c.w, true);
    check_wgmma_overlap(t, c.w, c.w + box_bytes(c.map));
    unsigned long long* bar = mbarrier_at(t, address_of(t, operand(t, in, 2)));
    c.load = true;
    c.bar = bar;
    c.thread = me();
    // the copy for each block of the mask: the same box at the same offset of its shared memory, counted off its
    // barrier at the same offset; it lands when that block's threads wait on that barrier (cluster_switch)
    for (unsigned r = 0; r < cluster_blocks; ++r) {
        if (!((mask >> r) & 1u)) continue;
        const ClusterBlock& b = cluster_block[r];
        if (r != cluster_rank_now && b.ended) {
            char what[240];
            std::snprintf(what, sizeof what, "a multicast TMA load into block (%u,%u,%u), rank %u of the cluster, "
                          "whose threads have all exited", b.block_idx.x, b.block_idx.y, b.block_idx.z, r);
            stop(t, what);
        }
        if (mb_expected(mb_of(bar, r)) == 0)
            stop(t, r == cluster_rank_now ? "a TMA load that completes on an mbarrier that mbarrier.init has not set "
                                            "up" : "a multicast TMA load that completes on an mbarrier another block "
                                                   "of the cluster has not set up (mbarrier.init, then a cluster "
                                                   "barrier before the copies)");
        queue_copy(t, c, r == cluster_rank_now ? 0 : b.serial);
        mb_look_again(bar, r);                         // (a thread asleep on the barrier may land it)
    }
}

// ---- wgmma: a warpgroup's D (64 x N, FP32) = A (64 x K) B (K x N) (+ D) ------------------------------------
// A and B from shared memory through matrix descriptors (A also from registers), in the canonical layouts: with a
// swizzle of span T bytes, element (mn, k) of a K-major operand lies at start + (mn / 8) SBO + (mn % 8) T + k e,
// of an MN-major one at start + (mn e / T) LBO + (k / 8) SBO + (k % 8) T + (mn e % T), then swizzled as TMA
// wrote it; without a swizzle (K-major only) the 8 x 16-byte core matrices lie LBO apart along K, SBO along MN.
// D's registers: warp w of the warpgroup holds rows 16 w + lane / 4 and 8 below, columns 8 j + 2 (lane % 4) and
// the next, in registers 4 j .. 4 j + 3.
struct Descriptor {
    unsigned long long start, lbo, sbo;
    unsigned mode, span;
};
GL_NOSAN inline Descriptor descriptor(unsigned long long d)
{
    Descriptor r;
    r.start = (d & 0x3FFF) << 4;
    r.lbo = ((d >> 16) & 0x3FFF) << 4;
    r.sbo = ((d >> 32) & 0x3FFF) << 4;
    const unsigned layout = (unsigned)(d >> 62);
    r.mode = layout == 1 ? 3 : layout == 2 ? 2 : layout == 3 ? 1 : 0;        // as TMA numbers the swizzles
    r.span = span_of(r.mode);
    return r;
}
GL_NOSAN inline unsigned long long operand_address(const Descriptor& d, unsigned mn, unsigned k, unsigned es,
                                                   bool k_major)
{
    unsigned long long a;
    if (k_major) {
        const unsigned long long kb = (unsigned long long)k * es;
        a = d.mode ? d.start + (mn / 8) * d.sbo + (mn % 8) * d.span + (kb / d.span) * d.lbo + kb % d.span
                   : d.start + (mn / 8) * d.sbo + (kb / 16) * d.lbo + (mn % 8) * 16 + kb % 16;
    } else {
        const unsigned long long mb = (unsigned long long)mn * es;
        a = d.start + (mb / d.span) * d.lbo + (k / 8) * d.sbo + (k % 8) * d.span + mb % d.span;
    }
    return swizzled(a, d.mode);
}

struct Wgmma {                         // one instruction's shape and the operands every thread gives alike
    int N, K;
    Precision p;
    bool a_regs, a_kmajor, b_kmajor, accumulate;
    float scale_a, scale_b;
    unsigned long long desc_a, desc_b;
    const char* file;
    int line;
    const void* pc;
};

// an operand's element at `at` (its bytes read as the racecheck sees a read; the span's bounds were checked at issue)
GL_NOSAN inline float shared_element(const unsigned char* at, Precision p, const void* pc)
{
#if defined(GL_EMU_RACECHECK)
    shadow_check(reinterpret_cast<uintptr_t>(at), element_size(p), false, pc);
#else
    (void)pc;
#endif
    if (p == P_TF32) {
        unsigned u;
        std::memcpy(&u, at, 4);
        return element(u, p);
    }
    if (element_size(p) == 1) return element(*at, p);
    unsigned short h;
    std::memcpy(&h, at, 2);
    return element(h, p);
}

[[noreturn]] GL_NOSAN inline void stop_here(const Wgmma& w, const char* what)
{
    Thread t{};
    t.file = w.file;
    t.line = w.line;
    stop(t, what);
}

// A wgmma in flight: issued by its warpgroup, computed when a thread of it first waits for it (reading shared memory
// then), its results copied into each thread's accumulators at that thread's own wait. Until then the accumulator
// operands hold UNREADY, a NaN: a thread that reads them early gets it, where a GPU's thread would get registers
// the tensor cores have not written yet. A wgmma that accumulates onto another's pending results (the same
// operands, not yet waited for) takes them from it.
constexpr unsigned UNREADY = 0x7fedbeefu;
inline unsigned unready_words[128];
inline const bool unready_filled = (std::fill_n(unready_words, 128, UNREADY), true);
constexpr int MAX_SOURCES = 8;
struct PendingLanes {                   // a pending wgmma's operands and results, thread by thread (l: 0-127)
    unsigned a_in[128][4];
    bool waited[128];
    bool in_order[128];                 // thread l's accumulators are one array, in order (then only dst[l][0] is kept)
    float* dst[128][128];
    uintptr_t dst_lo[128], dst_hi[128];  // the lowest and highest of each thread's dst (a quick "not among them")
    float din[128][128];
    int from[128];                      // a pending wgmma's slot whose result i is thread l's input i for every i; or -1,
    int src[128][128];                  // then a pending wgmma's slot * 256 + its element, whose result is input i; -1
    float res[128][128];
};
// thread l's accumulator i (a register: its address)
GL_NOSAN inline float* reg(const PendingLanes& x, unsigned l, int i) { return x.in_order[l] ? x.dst[l][0] + i : x.dst[l][i]; }
struct Pending {
    bool used, computed;
    unsigned long long block, seq, group;
    unsigned base;                      // the warpgroup's first thread
    int sources[MAX_SOURCES], n_sources; // the pending wgmma whose results it takes as inputs (their slots)
    int dependents;                     // pending wgmma not yet computed that take this one's results
    Wgmma w;
    int n_acc;
    unsigned n_waited;
    unsigned long long a_lo, a_hi, b_lo, b_hi;       // the shared memory its operands lie in
    const unsigned char* a_at;          // where a_lo is (the span lies in one array)
    const unsigned char* b_at;
    PendingLanes* x;                    // (apart: the table of Pending is scanned often, and these are large)
};
constexpr int MAX_PENDING = 192;                       // (48 a block, for a cluster of up to 4 at once)
inline Pending pending_wgmma[MAX_PENDING];
inline PendingLanes pending_lanes[MAX_PENDING];
inline int live_slots[MAX_PENDING], n_live = 0;        // the slots in use, in no order (only these are scanned)
inline unsigned long long wgmma_seq = 0;

GL_NOSAN inline bool pending_here(const Pending& p) { return p.used && p.block == block_serial; }

// the wgmma in slot live_slots[s] if it is in flight in this block's warpgroup at `base`, else null (the loops
// over them go from n_live - 1 down, so that free_pending may take the slot out as they go)
GL_NOSAN inline Pending* live_at(int s, unsigned base)
{
    Pending& p = pending_wgmma[live_slots[s]];
    return pending_here(p) && p.base == base ? &p : nullptr;
}
GL_NOSAN inline void free_pending(Pending& p)
{
    p.used = false;
    const int slot = (int)(&p - pending_wgmma);
    for (int s = 0; s < n_live; ++s)
        if (live_slots[s] == slot) {
            live_slots[s] = live_slots[--n_live];
            return;
        }
}

// whether q writes every accumulator of p's thread l (both arrays in order from the same register)
GL_NOSAN __attribute__((always_inline)) inline bool writes_all(const Pending& q, const Pending& p, unsigned l)
{
    return q.x->in_order[l] && p.x->in_order[l] && q.x->dst[l][0] == p.x->dst[l][0] && q.n_acc >= p.n_acc;
}
// p takes results of the wgmma in flight in `slot` as inputs (which is computed first, and freed only after)
GL_NOSAN inline void take_from(Pending& p, int slot)
{
    for (int j = 0; j < p.n_sources; ++j)
        if (p.sources[j] == slot) return;
    if (p.n_sources == MAX_SOURCES) stop_here(p.w, "a wgmma whose accumulators come from more than 8 others in flight");
    p.sources[p.n_sources++] = slot;
    ++pending_wgmma[slot].dependents;
}

// which of q's accumulators of thread l is register a (first tried: the one at `hint`, then where a lies from the
// first if they are an array in order), or -1
GL_NOSAN inline int accumulator_index(const Pending& q, unsigned l, const float* a, int hint)
{
    const PendingLanes& x = *q.x;
    if (hint < q.n_acc && reg(x, l, hint) == a) return hint;
    const uintptr_t at = reinterpret_cast<uintptr_t>(a);
    if (q.n_acc == 0 || at < x.dst_lo[l] || at > x.dst_hi[l]) return -1;
    const uintptr_t first = reinterpret_cast<uintptr_t>(x.dst[l][0]);
    if (at >= first && (at - first) % sizeof(float) == 0 && (at - first) / sizeof(float) < (uintptr_t)q.n_acc &&
        reg(x, l, (int)((at - first) / sizeof(float))) == a)
        return (int)((at - first) / sizeof(float));
    if (x.in_order[l]) return -1;
    for (int j = 0; j < q.n_acc; ++j)
        if (x.dst[l][j] == a) return j;
    return -1;
}

// the shared memory an operand's descriptor reads (its lowest and highest byte + 1); every element must lie in the
// block's shared memory
GL_NOSAN inline const unsigned char* operand_span(const Wgmma& w, char which, unsigned long long desc, unsigned mns,
                                                  unsigned es, bool k_major, unsigned long long& lo,
                                                  unsigned long long& hi)
{
    const Descriptor d = descriptor(desc);
    lo = ~0ull;
    hi = 0;
    const unsigned per = 16 / es, mn_step = k_major ? 1 : per, k_step = k_major ? per : 1;
    for (unsigned mn = 0; mn < mns; mn += mn_step)     // (a 16-byte chunk of consecutive elements at a time: k of a
        for (unsigned k = 0; k < (unsigned)w.K; k += k_step) {    // K-major operand, m or n of an MN-major one)
            const unsigned long long a = operand_address(d, mn, k, es, k_major);
            lo = a < lo ? a : lo;
            hi = a + 16 > hi ? a + 16 : hi;
        }
    const unsigned char* at = shared_region(lo, hi - lo);
    bool clean = at != nullptr;                        // (in one array; no ordinary store to it the proxy may miss)
    for (unsigned mn = 0; clean && proxy_dirty && mn < mns; mn += mn_step)
        for (unsigned k = 0; clean && k < (unsigned)w.K; k += k_step)
            clean = !unfenced_writer(at + (operand_address(d, mn, k, es, k_major) - lo), 16);
    if (clean) return at;
    for (unsigned mn = 0; mn < mns; ++mn)              // each element: where it lies, who stored to it
        for (int k = 0; k < w.K; ++k) {
            const unsigned long long a = operand_address(d, mn, (unsigned)k, es, k_major);
            const void* p = at ? at + (a - lo) : from_shared_window((size_t)a);
            if (const unsigned writer = in_block_shared(p, es) ? unfenced_writer(p, es) : 0) {
                char what[400];
                const int used = std::snprintf(what, sizeof what, "a wgmma whose %c operand's element (%u, %d), at "
                                               "shared address %llu: ", which, mn, k, a);
                name_writer(what + used, sizeof what - used, writer);
                stop_here(w, what);
            }
            if (!in_block_shared(p, es)) {
                char what[400];
                std::snprintf(what, sizeof what, "a wgmma whose descriptor for %c (start %llu, LBO %llu, SBO %llu, "
                              "%s) reaches shared address %llu for its element (%u, %d), outside the block's shared "
                              "arrays and the dynamic shared memory its launch gave", which, d.start, d.lbo, d.sbo,
                              d.mode == 3 ? "128-byte swizzle" : d.mode == 2 ? "64-byte swizzle" : d.mode == 1
                              ? "32-byte swizzle" : "no swizzle", a, mn, k);
                stop_here(w, what);
            }
        }
    if (!at) {
        char what[300];
        std::snprintf(what, sizeof what, "a wgmma whose %c operand (shared addresses %llu-%llu) spans more than one "
                      "shared array", which, lo, hi - 1);
        stop_here(w, what);
    }
    return at;
}

// a TMA load about to write [lo, hi) of shared memory: no wgmma in flight may still read it
GL_NOSAN inline void check_wgmma_overlap(const Thread& t, unsigned long long lo, unsigned long long hi)
{
    for (int s = 0; s < n_live; ++s) {
        const Pending& p = pending_wgmma[live_slots[s]];
        if (!pending_here(p) || p.computed) continue;
        const bool a = !p.w.a_regs && lo < p.a_hi && p.a_lo < hi, b = lo < p.b_hi && p.b_lo < hi;
        if (!a && !b) continue;
        char what[400];
        std::snprintf(what, sizeof what, "a TMA load into shared memory %llu-%llu, which the wgmma issued at %s:%d "
                      "may still be reading (its %s operand; no thread of its warpgroup has waited for it with "
                      "wgmma.wait_group): the copy may overwrite it before the tensor cores read it", lo, hi - 1,
                      p.w.file, p.w.line, a ? "A" : "B");
        stop(t, what);
    }
}

GL_NOSAN inline void wgmma_issue(Lane* const* lanes, unsigned)
{
    const Wgmma& w = *static_cast<const Wgmma*>(lanes[0]->extra);
    for (int l = 1; l < 128; ++l) {                    // one instruction: every thread gives the same operands
        const Wgmma& o = *static_cast<const Wgmma*>(lanes[l]->extra);
        if (o.desc_a != w.desc_a || o.desc_b != w.desc_b || o.accumulate != w.accumulate || o.scale_a != w.scale_a ||
            o.scale_b != w.scale_b || o.N != w.N)
            stop_here(w, "the threads of a warpgroup give one wgmma different descriptors, scale-d or scales");
    }
    const unsigned base = me() & ~127u;
    Pending* p = nullptr;
    int mine = 0;
    for (int s = 0; s < n_live; ++s) {                 // a slot of a block that is gone, or a free one
        Pending& q = pending_wgmma[live_slots[s]];
        mine += pending_here(q);
        if (!p && q.block < oldest_live_block) p = &q;
    }
    if (mine == MAX_PENDING / 4) stop_here(w, "more than 48 wgmma in flight in one block (no wgmma.wait_group?)");
    if (!p && n_live < MAX_PENDING)
        for (Pending& q : pending_wgmma)
            if (!q.used) {
                p = &q;
                live_slots[n_live++] = (int)(p - pending_wgmma);
                break;
            }
    if (!p) stop_here(w, "more than 192 wgmma in flight in the blocks of one cluster");
    p->used = true;
    p->computed = false;
    p->block = block_serial;
    p->seq = ++wgmma_seq;
    p->group = wgmma_commits[base];
    p->base = base;
    p->w = w;
    p->n_acc = lanes[0]->n_acc;
    p->n_waited = 0;
    p->n_sources = 0;
    p->dependents = 0;
    p->x = &pending_lanes[p - pending_wgmma];
    PendingLanes& x = *p->x;
    const unsigned es = element_size(w.p);
    p->a_at = w.a_regs ? nullptr : operand_span(w, 'A', w.desc_a, 64, es, w.a_kmajor, p->a_lo, p->a_hi);
    p->b_at = operand_span(w, 'B', w.desc_b, (unsigned)w.N, es, w.b_kmajor, p->b_lo, p->b_hi);
    const Pending* recent[MAX_PENDING];                // the warpgroup's other wgmma in flight, the latest first
    int n_recent = 0;
    for (int s = n_live - 1; s >= 0; --s) {
        const Pending* q = live_at(s, base);
        if (!q || q == p) continue;
        int at = n_recent++;
        for (; at > 0 && recent[at - 1]->seq < q->seq; --at) recent[at] = recent[at - 1];
        recent[at] = q;
    }
    for (unsigned l = 0; l < 128; ++l) {
        const Lane& L = *lanes[l];
        x.waited[l] = false;
        for (int i = 0; i < 4; ++i) x.a_in[l][i] = (unsigned)L.in[i];
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        bool in_order = L.base != nullptr;
        float* const first = in_order ? L.base : L.dst[0];
        if (in_order) {
            lo = reinterpret_cast<uintptr_t>(L.base);
            hi = reinterpret_cast<uintptr_t>(L.base + p->n_acc - 1);
        }
        for (int i = 0; i < p->n_acc && !L.base; ++i) {
            const uintptr_t at = reinterpret_cast<uintptr_t>(L.dst[i]);
            lo = at < lo ? at : lo;
            hi = at > hi ? at : hi;
            in_order = (i == 0 || in_order) && L.dst[i] == L.dst[0] + i;
        }
        x.dst_lo[l] = lo;
        x.dst_hi[l] = hi;
        x.in_order[l] = in_order;
        if (in_order) x.dst[l][0] = first;
        else std::memcpy(x.dst[l], L.dst, p->n_acc * sizeof(float*));
        const Pending* whole = nullptr;                // the latest in flight that writes every one of them, in order
        if (in_order && w.accumulate)
            for (int r = 0; r < n_recent; ++r) {
                const Pending& q = *recent[r];
                if (q.x->waited[l] || lo > q.x->dst_hi[l] || hi < q.x->dst_lo[l]) continue;
                if (writes_all(q, *p, l)) whole = &q;
                break;
            }
        // (then every input is its result: none was written since)
        const bool all = whole != nullptr && std::memcmp(L.acc, unready_words, sizeof(float) * p->n_acc) == 0;
        x.from[l] = all ? (int)(whole - pending_wgmma) : -1;
        if (all) {
            take_from(*p, x.from[l]);
            continue;
        }
        std::memcpy(x.din[l], L.acc, p->n_acc * sizeof(float));
        for (int i = 0; i < p->n_acc; ++i) {
            x.src[l][i] = -1;
            unsigned bits;
            std::memcpy(&bits, &L.acc[i], 4);
            if (bits != UNREADY || !w.accumulate) continue;
            const Pending* from = whole;               // the latest wgmma in flight that writes this operand
            int at = whole ? i : -1;
            for (int r = 0; r < n_recent && !from; ++r) {
                const Pending& q = *recent[r];
                if (q.x->waited[l]) continue;
                const int k = accumulator_index(q, l, reg(x, l, i), i);
                if (k >= 0) { from = &q; at = k; }
            }
            if (!from) continue;
            const int slot = (int)(from - pending_wgmma);
            x.src[l][i] = slot * 256 + at;
            take_from(*p, slot);
        }
    }
}

#if defined(GL_TC_AVX2)
inline const bool has_f16c = __builtin_cpu_supports("f16c");
// eight FP16 values (the 16 bytes at `at`) as floats, exactly; false if one is infinite or NaN (element() reads those)
GL_NOSAN __attribute__((target("avx2,f16c"))) inline bool halves_to_floats(const unsigned char* at, float* out)
{
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at)), top = _mm_set1_epi16(0x7c00);
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, top), top))) return false;
    _mm256_storeu_ps(out, _mm256_cvtph_ps(h));
    return true;
}
#endif

// the values of an operand in shared memory (mns rows or columns, K deep) times scale, into out[mn * ld_mn + k *
// ld_k]: read a 16-byte chunk at a time (every layout and swizzle of a descriptor moves 16-byte chunks whole, and a
// chunk holds consecutive k of a K-major operand, consecutive m or n of an MN-major one)
template <class T>
GL_NOSAN inline void gather(const Wgmma& w, unsigned long long desc, bool k_major, const unsigned char* at,
                            unsigned long long lo, unsigned mns, T* out, int ld_mn, int ld_k, float scale)
{
    const Descriptor d = descriptor(desc);
    const unsigned es = element_size(w.p), per = 16 / es;
    const unsigned outer = k_major ? mns : (unsigned)w.K, inner = k_major ? (unsigned)w.K : mns;
    for (unsigned o = 0; o < outer; ++o)
        for (unsigned i0 = 0; i0 < inner; i0 += per) {
            const unsigned mn = k_major ? o : i0, k = k_major ? i0 : o;
            const unsigned char* chunk = at + (operand_address(d, mn, k, es, k_major) - lo);
            T* to = out + (size_t)mn * ld_mn + (size_t)k * ld_k;
            const int step = k_major ? ld_k : ld_mn;
#if defined(GL_EMU_RACECHECK)
            for (unsigned e = 0; e < per; ++e) to[e * step] = scale * shared_element(chunk + e * es, w.p, w.pc);
#else
#if defined(GL_TC_AVX2)
            float f[8];
            if (w.p == P_F16 && has_f16c && halves_to_floats(chunk, f)) {
                for (unsigned e = 0; e < 8; ++e) to[e * step] = scale * f[e];
                continue;
            }
#endif
            unsigned short h[8];
            unsigned u[4];
            if (es == 1) {
                for (unsigned e = 0; e < per; ++e) to[e * step] = scale * element(chunk[e], w.p);
                continue;
            }
            if (es == 4) std::memcpy(u, chunk, 16);
            else std::memcpy(h, chunk, 16);
            for (unsigned e = 0; e < per; ++e) to[e * step] = scale * (es == 4 ? element(u[e], w.p) : element(h[e], w.p));
#endif
        }
}

GL_NOSAN inline void wgmma_compute(Pending& p)
{
    const Wgmma& w = p.w;
    const bool fp8 = element_size(w.p) == 1;
    const int G = w.p == P_TF32 ? GL_TC_GROUP_TF32 : fp8 ? GL_TC_GROUP_FP8 : GL_TC_GROUP_16BIT;
    static float A[64][32], D[64][256];
    static double B[32][256];
    if (w.a_regs) {                                    // the mma.sync layout, warp by warp (16 rows each)
        static float A16[64][16];
        for (int l = 0; l < 128; ++l) a_fragment(A16, 16 * (l / 32), l % 32, p.x->a_in[l], w.p);
        for (int m = 0; m < 64; ++m)
            for (int k = 0; k < w.K; ++k) A[m][k] = A16[m][k] * w.scale_a;
    } else {
        gather(w, w.desc_a, w.a_kmajor, p.a_at, p.a_lo, 64, &A[0][0], 32, 1, w.scale_a);
    }
    gather(w, w.desc_b, w.b_kmajor, p.b_at, p.b_lo, (unsigned)w.N, &B[0][0], 1, 256, w.scale_b);
    for (int l = 0; l < 128; ++l) {                    // D in: as issued, or another wgmma's result
        const int r0 = 16 * (l / 32), g8 = (l % 32) / 4, t = l % 4, from = p.x->from[l];
        const float* whole = from >= 0 ? pending_lanes[from].res[l] : nullptr;
        for (int j = 0; j < w.N / 8; ++j)
            for (int e = 0; e < 4; ++e) {
                const int i = 4 * j + e, src = whole ? -1 : p.x->src[l][i];
                D[r0 + g8 + 8 * (e / 2)][8 * j + 2 * t + e % 2] =
                    whole ? whole[i] : src < 0 ? p.x->din[l][i] : pending_lanes[src / 256].res[l][src % 256];
            }
    }
    if (!w.accumulate)
        for (int m = 0; m < 64; ++m)
            for (int n = 0; n < w.N; ++n) D[m][n] = 0.0f;
    gl_tc_matmul(&D[0][0], 256, &A[0][0], 32, &B[0][0], 256, 64, w.N, w.K, G,
                 fp8 ? GL_TC_ALIGN_BITS_FP8 : GL_TC_ALIGN_BITS);
    for (int l = 0; l < 128; ++l) {
        const int r0 = 16 * (l / 32), g8 = (l % 32) / 4, t = l % 4;
        for (int j = 0; j < w.N / 8; ++j)
            for (int e = 0; e < 4; ++e) p.x->res[l][4 * j + e] = D[r0 + g8 + 8 * (e / 2)][8 * j + 2 * t + e % 2];
    }
    p.computed = true;
    for (int j = 0; j < p.n_sources; ++j) --pending_wgmma[p.sources[j]].dependents;
}

// whether one of `later` (wgmma of p's warpgroup issued after it, whose results thread l has not taken yet) writes
// p's accumulator i too (then the register stays not ready: its value is that later one's, still in flight)
GL_NOSAN inline bool rewritten_later(const Pending& p, const Pending* const* later, int n_later, unsigned l, int i)
{
    for (int r = 0; r < n_later; ++r)
        if (accumulator_index(*later[r], l, reg(*p.x, l, i), i) >= 0) return true;
    return false;
}

// The statement's output operands ordered by address, to find those an accumulator's register is (a wait_group in
// the statement of its wgmma, or one that lists the accumulators, writes the results back through them)
struct Outputs {
    int n = 0;
    Op* by_address[160];
    static uintptr_t key(const Op* o) { return reinterpret_cast<uintptr_t>(o->addr); }
    GL_NOSAN explicit Outputs(Thread& t)
    {
        for (int j = 0; j < t.n_c; ++j) {
            if (c_operand(t, j).mode == 'i') continue;
            int at = n++;
            for (; at > 0 && key(by_address[at - 1]) > key(&t.c[j]); --at) by_address[at] = by_address[at - 1];
            by_address[at] = &t.c[j];
        }
    }
    GL_NOSAN void write(const float* reg, float value) const
    {
        int lo = 0, hi = n;                            // the first at or above reg, then every one at reg
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (key(by_address[mid]) < reinterpret_cast<uintptr_t>(reg)) lo = mid + 1;
            else hi = mid;
        }
        for (; lo < n && key(by_address[lo]) == reinterpret_cast<uintptr_t>(reg); ++lo)
            std::memcpy(&by_address[lo]->bits, &value, 4);
    }
};

// wgmma.wait_group n by this thread: every wgmma of its warpgroup in a group older than its n most recent is
// computed (oldest first), and this thread's results are in its accumulators
GL_NOSAN inline void wgmma_wait(Thread& t, unsigned long long n)
{
    const unsigned mine = me(), base = mine & ~127u, l = mine - base;
    const unsigned long long done = wgmma_commits[mine];
    if (done <= n) return;
    const Outputs outputs(t);
    for (;;) {
        Pending* first = nullptr;                     // the oldest of those this thread still has to take
        for (int s = n_live - 1; s >= 0; --s)
            if (Pending* p = live_at(s, base); p && p->group < done - n && !p->x->waited[l] &&
                                               (!first || p->seq < first->seq))
                first = p;
        if (!first) break;
        if (!first->computed) {                        // (and every older one of the warpgroup, oldest first: its
            Pending* older[MAX_PENDING];               // inputs)
            int n_older = 0;
            for (int s = n_live - 1; s >= 0; --s) {
                Pending* p = live_at(s, base);
                if (!p || p->computed || p->seq > first->seq) continue;
                int at = n_older++;
                for (; at > 0 && older[at - 1]->seq > p->seq; --at) older[at] = older[at - 1];
                older[at] = p;
            }
            for (int r = 0; r < n_older; ++r) wgmma_compute(*older[r]);
        }
        const Pending* later[MAX_PENDING];             // those after it that write some of the same registers
        int n_later = 0;
        bool none = false;                             // (one of them writes them all: none is ready)
        const PendingLanes& x = *first->x;
        for (int s = n_live - 1; s >= 0; --s) {
            const Pending* q = live_at(s, base);
            if (!q || q->seq <= first->seq || q->x->waited[l] || q->x->dst_lo[l] > x.dst_hi[l] ||
                q->x->dst_hi[l] < x.dst_lo[l])
                continue;
            later[n_later++] = q;
            none = none || writes_all(*q, *first, l);
        }
        if (!none && !n_later && !outputs.n && x.in_order[l])
            std::memcpy(x.dst[l][0], x.res[l], first->n_acc * sizeof(float));
        else if (!none)
            for (int i = 0; i < first->n_acc; ++i) {
                if (n_later && rewritten_later(*first, later, n_later, l, i)) continue;
                *reg(x, l, i) = x.res[l][i];
                outputs.write(reg(x, l, i), x.res[l][i]);    // (an operand of this statement too)
            }
        first->x->waited[l] = true;
        ++first->n_waited;
    }
    // a wgmma every thread has taken, whose results no wgmma still to be computed takes, is done
    for (int s = n_live - 1; s >= 0; --s)
        if (Pending* p = live_at(s, base); p && p->n_waited == 128 && p->dependents == 0) free_pending(*p);
}

GL_NOSAN inline void run_wgmma(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    on_block();
    if (!in.variant)
        in.variant = starts(op, "wgmma.fence.") ? 1 : starts(op, "wgmma.commit_group.") ? 2
                   : starts(op, "wgmma.wait_group.") ? 3 : starts(op, "wgmma.mma_async.sync.aligned.m64n") ? 4 : 5;
    if (in.variant == 1) return;
    if (in.variant == 2) {
        ++wgmma_commits[me()];
        return;
    }
    if (in.variant == 3) {
        if (in.count != 1) stop(t, "wgmma.wait_group takes the number of groups that may stay pending");
        wgmma_wait(t, read(t, operand(t, in, 0)));
        return;
    }
    if (in.variant != 4)
        stop(t, "a wgmma instruction the emulator does not run (it runs mma_async, fence, commit_group, wait_group)");
    Wgmma w{};
    if (!in.shape_n) {                                 // (read once: the same for every thread and every run)
        int n = 0, k = 0;
        if (std::sscanf(op, "wgmma.mma_async.sync.aligned.m64n%dk%d.", &n, &k) != 2 || n < 8 || n > 256 || n % 8)
            stop(t, "a wgmma shape other than m64nNk16 (N a multiple of 8 up to 256), m64nNk8 or m64nNk32");
        const bool sixteen = has(op, ".f32.f16.f16") || has(op, ".f32.bf16.bf16");
        const bool eight = has(op, ".f32.e4m3.e4m3") || has(op, ".f32.e5m2.e5m2");
        if (!((sixteen && k == 16) || (has(op, ".f32.tf32.tf32") && k == 8) || (eight && k == 32)))
            stop(t, "a wgmma type the emulator does not run (it runs .f32.f16.f16 and .f32.bf16.bf16 at k16, "
                    ".f32.tf32.tf32 at k8, .f32.e4m3.e4m3 and .f32.e5m2.e5m2 at k32)");
        in.shape_k = (short)k;
        in.shape_n = (short)n;
        in.precision = (unsigned char)mma_precision(op);
        const Operand& v = operand(t, in, 0);
        bool consecutive = v.kind == K_VEC && v.count > 0;
        for (int i = 0; consecutive && i < v.count; ++i) {
            const Operand& e = t.program->ops[v.first + i];
            consecutive = e.kind == K_C && e.value == t.program->ops[v.first].value + i;
        }
        in.acc_first = consecutive ? (short)t.program->ops[v.first].value : (short)-1;
    }
    w.N = in.shape_n;
    const int k = w.K = in.shape_k;
    w.p = (Precision)in.precision;
    const bool sixteen = w.p == P_F16 || w.p == P_BF16;     // (only these take the transposes)
    const int want = sixteen ? 8 : 6;                  // d, a, b, scale-d, scale-a, scale-b (, tnsp-a, tnsp-b)
    const Operand& a = operand(t, in, 1);
    w.a_regs = a.kind == K_VEC;
    if (w.a_regs && element_size(w.p) == 1)
        stop(t, "an FP8 wgmma with A in registers (the emulator runs FP8 operands from shared memory)");
    if (in.count != (w.a_regs && sixteen ? 7 : w.a_regs ? 6 : want))
        stop(t, "wgmma takes d, a, b, scale-d, imm-scale-a, imm-scale-b and, for 16-bit operands from shared memory, "
                "imm-trans-a and imm-trans-b");
    const Operand& dv = operand(t, in, 0);
    const int nd = dv.kind == K_VEC ? dv.count : 1;
    if (nd != w.N / 2) {
        char what[160];
        std::snprintf(what, sizeof what, "wgmma m64n%dk%d takes %d accumulator registers, not %d", w.N, k, w.N / 2, nd);
        stop(t, what);
    }
    w.desc_a = w.a_regs ? 0 : read(t, a);
    w.desc_b = read(t, operand(t, in, 2));
    w.accumulate = read(t, operand(t, in, 3)) != 0;
    const long long sa = (long long)read(t, operand(t, in, 4)), sb = (long long)read(t, operand(t, in, 5));
    if ((sa != 1 && sa != -1) || (sb != 1 && sb != -1)) stop(t, "wgmma's imm-scale-a and imm-scale-b are 1 or -1");
    w.scale_a = (float)sa;
    w.scale_b = (float)sb;
    w.a_kmajor = true;
    w.b_kmajor = true;
    if (sixteen && !w.a_regs) {
        w.a_kmajor = read(t, operand(t, in, 6)) == 0;
        w.b_kmajor = read(t, operand(t, in, 7)) == 0;
    } else if (sixteen) {
        w.b_kmajor = read(t, operand(t, in, 6)) == 0;
    }
    const Descriptor db = descriptor(w.desc_b);
    if (db.mode == 0 && !w.b_kmajor) stop(t, "an MN-major wgmma operand without a swizzle (the emulator runs MN-major "
                                             "operands in the 32-, 64- and 128-byte swizzles)");
    if (!w.a_regs && descriptor(w.desc_a).mode == 0 && !w.a_kmajor)
        stop(t, "an MN-major wgmma operand without a swizzle (the emulator runs MN-major operands in the 32-, 64- "
                "and 128-byte swizzles)");
    w.file = t.file;
    w.line = t.line;
    w.pc = t.pc;
    float acc[128];
    float* dst[128];
    float* base = nullptr;                             // the accumulators are a Span's elements, in order, unread:
    for (int s = 0; s < t.n_spans && in.acc_first >= 0 && !base; ++s) {     // read from the array, and written
        const Span& r = t.spans[s];                                          // there below
        if (r.size != 4 || r.kind != 'f' || in.acc_first < r.first || in.acc_first + nd > r.first + r.count) continue;
        if (!r.any_filled())                           // (an instruction before it in the statement may have read one)
            base = reinterpret_cast<float*>(r.base) + (in.acc_first - r.first);
    }
    const Operand* d[160];
    if (base) std::memcpy(acc, base, sizeof(float) * nd);
    else elements(t, dv, d, 160);
    for (int i = 0; i < nd && !base; ++i) {
        const Operand& o = *d[i];
        if (o.kind == K_C && o.value >= t.n_c) stop(t, "an operand number past the statement's operands");
        if (o.kind != K_C || c_operand(t, o.value).mode == 'i' || t.c[o.value].size != 4)
            stop(t, "wgmma's accumulators must be the statement's own float operands (\"+f\")");
        const Op& c = t.c[o.value];
        std::memcpy(&acc[i], &c.bits, 4);
        dst[i] = static_cast<float*>(c.addr);
    }
    Lane mine{};
    mine.instr = &in;
    mine.acc = acc;
    mine.dst = base ? nullptr : dst;
    mine.base = base;
    mine.n_acc = nd;
    if (w.a_regs) {
        const Operand* ar[8];
        if (elements(t, a, ar, 8) != 4) stop(t, "wgmma's A from registers is 4 registers a thread");
        for (int i = 0; i < 4; ++i) mine.in[i] = read(t, *ar[i]);
    }
    mine.extra = &w;
    if (base) std::memcpy(base, unready_words, sizeof(float) * nd);     // (until this thread waits for the
    for (int i = 0; i < nd && !base; ++i) t.c[d[i]->value].bits = UNREADY;  // results; the issue reads them from acc)
    group_together(&mine, t, wgmma_issue, 128);
}

// ---- what a block must have finished when its threads are done ----------------------------------------------
GL_NOSAN inline void fresh_block()
{
    state_block = block_serial;
    std::memset(bulk_commits, 0, sizeof bulk_commits);
    std::memset(wgmma_commits, 0, sizeof wgmma_commits);
    for (Named& b : named) b = Named{0, 0, 0};
    while (copy_top > 0 && !(copies[copy_top - 1].used && copies[copy_top - 1].block >= oldest_live_block))
        --copy_top;                                    // (the copies of the cluster's other blocks stay)
}
GL_NOSAN inline void block_end()
{
    char what[400];
    for (int s = 0; s < n_live; ++s)
        if (const Pending& p = pending_wgmma[live_slots[s]]; pending_here(p) && p.n_waited < 128) {
            std::snprintf(what, sizeof what, "inline PTX at %s:%d: a wgmma whose results %u of its warpgroup's 128 "
                          "threads never waited for (wgmma.commit_group, then wgmma.wait_group) before the block "
                          "ended", p.w.file, p.w.line, 128 - p.n_waited);
            return block_failed(what);
        }
    for (int i = 0; i < copy_top; ++i)
        if (const Copy& c = copies[i]; c.used && c.block == block_serial && !c.load) {
            std::snprintf(what, sizeof what, "inline PTX at %s:%d: a TMA store that its thread never waited for "
                          "(cp.async.bulk.commit_group, then cp.async.bulk.wait_group) before the block ended: the "
                          "copy may read shared memory the block no longer has", c.file, c.line);
            return block_failed(what);
        }
    for (int i = 0; i < copy_top; ++i)                 // (a load lands when a thread of its block waits for it)
        if (const Copy& c = copies[i]; c.used && c.block == block_serial && c.load) {
            std::snprintf(what, sizeof what, "inline PTX at %s:%d: a TMA load into this block's shared memory that "
                          "no thread of the block waited for (mbarrier.try_wait on its barrier) before the block "
                          "ended: the copy may write shared memory the block no longer has", c.file, c.line);
            return block_failed(what);
        }
}
inline const bool block_end_registered = (block_end_hook = block_end, true);
#if defined(GL_EMU_MEMCHECK) && !defined(GL_EMU_RACECHECK)
inline const bool watch_registered = (watch_shared = true, true);
#endif

}  // namespace ptx

GL_NOSAN inline int describe_ptx_wait(const Fiber& f, char* out, size_t size)
{
    if (f.state == AT_NAMED && f.wait_on == &ptx::cluster_barrier)
        return std::snprintf(out, size, "the cluster barrier (barrier.cluster.wait: %u of the cluster's %u threads "
                             "still running have arrived)", ptx::cluster_barrier.arrived, ptx::cluster_threads_left());
    if (f.state == AT_NAMED) {
        const ptx::Named& b = *static_cast<const ptx::Named*>(f.wait_on);
        return std::snprintf(out, size, "named barrier %llu (bar.sync: %u of its %u threads have arrived)", f.token,
                             b.arrived, b.expected);
    }
    const unsigned long long w = *static_cast<const unsigned long long*>(f.wait_on);
    return std::snprintf(out, size, "the mbarrier at shared address %zu for the phase of parity %llu (its current "
                         "phase has parity %u: %llu of its %llu arrivals and %lld transaction bytes still due)",
                         to_shared_window(reinterpret_cast<uintptr_t>(f.wait_on)), f.token, ptx::mb_phase(w),
                         ptx::mb_pending(w), ptx::mb_expected(w), ptx::mb_tx(w));
}

namespace ptx {

// ---- the statement -------------------------------------------------------------------------------------------
enum Family : unsigned char { F_UNREAD, F_MMA, F_LDMATRIX, F_MBARRIER, F_BAR, F_SETMAXNREG, F_FENCE, F_PROXY_FENCE,
                              F_WGMMA, F_BULK, F_CP_ASYNC, F_SCALAR, F_MEMORY, F_MAPA, F_CLUSTER_BAR, F_ELECT, F_UNKNOWN };
GL_NOSAN inline Family family_of(const char* op)
{
    if (starts(op, "mma.sync.")) return F_MMA;
    if (starts(op, "ldmatrix.")) return F_LDMATRIX;
    if (starts(op, "mbarrier.")) return F_MBARRIER;
    if (starts(op, "bar.") || starts(op, "barrier.sync") || starts(op, "barrier.arrive")) return F_BAR;
    if (starts(op, "barrier.cluster.")) return F_CLUSTER_BAR;
    if (starts(op, "mapa.")) return F_MAPA;
    if (starts(op, "elect.sync")) return F_ELECT;
    if (starts(op, "setmaxnreg.")) return F_SETMAXNREG;
    if (is_fence(op)) return starts(op, "fence.proxy.async") && !has(op, ".global") ? F_PROXY_FENCE : F_FENCE;
    if (starts(op, "wgmma.")) return F_WGMMA;
    if (starts(op, "cp.async.bulk.") || starts(op, "cp.reduce.async.bulk.")) return F_BULK;
    if (starts(op, "cp.async.")) return F_CP_ASYNC;
    if (starts(op, "mov.") || starts(op, "setp.") || starts(op, "selp.") || starts(op, "cvt.rna.tf32.f32"))
        return F_SCALAR;
    if (starts(op, "ld.") || starts(op, "st.")) return F_MEMORY;
    return F_UNKNOWN;
}

GL_NOSAN inline void run_instr(Thread& t, const Instr& in)
{
    if (in.family == F_UNREAD) in.family = family_of(in.opcode);
    switch (in.family) {
    case F_MMA: return run_mma(t, in);
    case F_LDMATRIX: return run_ldmatrix(t, in);
    case F_MBARRIER: return run_mbarrier(t, in);
    case F_BAR: return run_bar(t, in);
    case F_SETMAXNREG: return run_setmaxnreg(t, in);
    case F_PROXY_FENCE: ++proxy_fences[me()]; return;  // (the async proxy sees this thread's stores from here)
    case F_FENCE: return;
    case F_WGMMA: return run_wgmma(t, in);
    case F_BULK: return run_bulk(t, in);
    case F_CP_ASYNC: return run_cp_async(t, in);
    case F_SCALAR: return run_scalar(t, in);
    case F_MEMORY: return run_memory(t, in);
    case F_MAPA: return run_mapa(t, in);
    case F_ELECT: return run_elect(t, in);
    case F_CLUSTER_BAR: return run_cluster_barrier(t, in);
    default: break;
    }
    char what[160];
    std::snprintf(what, sizeof what, "asm(\"%s ...\")", in.opcode);
    unsupported("inline PTX assembly (asm)", what);
}

GL_NOSAN inline void write_back(const Op& c)          // an output operand's bits to its C variable
{
    switch (c.size) {                                  // (fixed sizes: copied in place, not by a call)
        case 4: std::memcpy(c.addr, &c.bits, 4); break;
        case 8: std::memcpy(c.addr, &c.bits, 8); break;
        case 2: std::memcpy(c.addr, &c.bits, 2); break;
        default: std::memcpy(c.addr, &c.bits, c.size);
    }
}

GL_NOSAN __attribute__((noinline)) inline void run(const char* text, const char* file, int line,
                                                    std::initializer_list<Op> operands)
{
    Op c[160];
    Span spans[8];
    int n = 0, n_spans = 0;
    for (const Op& o : operands) {
        if (!o.run) {
            if (n < 160) c[n++] = o;
            continue;
        }
        unsigned char* at = static_cast<unsigned char*>(o.addr);
        if (o.mode == '+' && n_spans < 8 && n + o.run <= 160) {      // (filled in when an instruction reads them)
            spans[n_spans++] = Span{n, o.run, at, o.size, o.kind, {0, 0, 0, 0}};
            n += o.run;
            continue;
        }
        for (int k = 0; k < o.run && n < 160; ++k, at += o.size) c[n++] = element_op(at, o.size, o.mode, o.kind);
    }
    Thread t;                                          // (its registers zeroed below: those the text declares)
    t.program = program_for(text);
    t.c = c;
    t.n_c = n;
    t.spans = spans;
    t.n_spans = n_spans;
    t.file = file;
    t.line = line;
    t.pc = __builtin_return_address(0);
    if (!t.program)
        stop(t, "more than 256 different inline-PTX statements in one module (the emulator's table is full)");
    if (t.program->error[0]) stop(t, t.program->error);
    std::memset(t.regs, 0, sizeof(t.regs[0]) * (size_t)t.program->n_regs);
    for (int i = 0; i < t.program->n_instr; ++i) {
        const Instr& in = t.program->instr[i];
        if (in.pred >= 0 && ((t.regs[in.pred] != 0) == in.negated)) continue;
        run_instr(t, in);
    }
    for (int i = 0, s = 0; i < n; ++i) {
        if (s < n_spans && i == spans[s].first) {     // a Span: only the elements read (its array is current)
            const Span& r = spans[s++];
            for (int k = r.first; r.any_filled() && k < r.first + r.count; ++k)
                if (r.is_filled(k)) write_back(c[k]);
            i = r.first + r.count - 1;
            continue;
        }
        if (c[i].mode != 'i') write_back(c[i]);
    }
}

}  // namespace ptx
}  // namespace gl_emu
