// gemmlab_ptx.h: the inline PTX of the book's kernels, run by the CPU emulator from their own asm statements.
//
// The loader (build.py) rewrites each asm statement whose instructions the emulator runs into a call of
// gl_emu::ptx::run with the statement's PTX text as written (string literals, macro arguments and all) and its
// C operands: outputs by address, inputs by value. So what runs is what the kernel says: an edited PTX string, a
// different register or shape changes what the emulator does, as it changes what the GPU does. The text is parsed
// once per statement (scopes, .reg declarations, predicates, vector and memory operands) and run by the thread
// that reaches it. Instructions that a warp executes together (mma.sync, ldmatrix: .sync.aligned) wait until every
// lane of the warp has reached the same statement; the last to arrive computes every lane's results from every
// lane's registers, in the fragment layouts the PTX ISA gives, with the tensor cores' arithmetic
// (gl_emu_tensor.h). Each lane's own memory reads are checked as its own (the memory check, racecheck). An
// instruction or form the emulator does not run stops the thread by name, as any other asm does.
#pragma once
#include "gemmlab_emu.h"
#include "gl_emu_half.h"
#include "gl_emu_tensor.h"
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
enum Kind { K_C, K_REG, K_IMM, K_FLOAT, K_VEC, K_MEM, K_SINK, K_SREG };
struct Operand {
    int kind;
    long long value;       // K_C: the operand's number; K_REG: the register's; K_IMM: the value; K_SREG: which
    double real;           // K_FLOAT
    int first, count;      // K_VEC: its elements in Program::ops; K_MEM: its base (one operand) there
    long long offset;      // K_MEM: the byte offset after the base
};
struct Instr {
    char opcode[112];
    int pred;              // the predicate register, or -1
    bool negated;
    int first, count;      // its operands in Program::ops
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
            S_CLUSTER_CTARANK, S_COUNT };
static const char* const SREG_NAMES[S_COUNT] = {"laneid", "warpid", "tid.x", "tid.y", "tid.z", "ntid.x", "ctaid.x",
                                                "ctaid.y", "ctaid.z", "cluster_ctarank"};

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
    in.pred = -1;
    in.negated = false;
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
    const char* q = s;
    for (const char* c = s; c <= end; ++c) {
        if (c < end && (*c == '{' || *c == '[')) ++depth;
        if (c < end && (*c == '}' || *c == ']')) --depth;
        if (c == end || (*c == ',' && depth == 0)) {
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
    Program* p = n_programs < CACHE ? &programs[n_programs++] : &programs[CACHE - 1];
    parse(*p, text);
    return p;
}

// ---- running it ---------------------------------------------------------------------------------------------
struct Thread {                        // one thread's run of one statement
    const Program* program;
    Op* c;                             // the C operands
    int n_c;
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
        default: return 0;             // %cluster_ctarank: a launch without clusters is a cluster of one block
    }
}

// a scalar operand's bits
GL_NOSAN inline unsigned long long read(const Thread& t, const Operand& o)
{
    switch (o.kind) {
        case K_C:
            if (o.value >= t.n_c) stop(t, "an operand number past the statement's operands");
            return t.c[o.value].bits;
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
    Op& c = t.c[o.value];
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

// ---- a warp's instruction: every lane waits for the others, the last computes for all -----------------------
// Each lane leaves a pointer to its own Lane (on its stack, alive while it waits) and the last to arrive fills in
// every lane's results; no lane reads another's Lane after the warp goes on.
struct Lane {
    const Instr* instr;
    unsigned long long in[8];          // its registers for the instruction
    unsigned long long out[8];         // its results
    const unsigned char* row;          // ldmatrix: the row it addresses (lanes 0 .. 8 x - 1)
};

GL_NOSAN __attribute__((noinline)) inline void warp_together(Lane* mine, const Thread& t,
                                                             void (*compute)(Lane* const* lanes, unsigned count))
{
    Fiber& me = g.fibers[g.cur];
    const unsigned base = me.linear & ~31u, lanes = g.n - base < 32 ? g.n - base : 32;
    if (lanes < 32) stop(t, "a warp instruction (.sync.aligned) in a warp of fewer than 32 threads: the block's "
                            "size is not a multiple of 32");
    me.state = AT_WARP_OP;
    me.op = OP_PTX;
    me.mask = 0xffffffffu;
    me.value = reinterpret_cast<uintptr_t>(mine);
    me.file = t.file;
    me.line = t.line;
    Fiber* warp = g.fibers + base;
    bool all = true;
    for (unsigned l = 0; l < 32; ++l) {
        const Fiber& f = warp[l];
        if (f.state == EXITED) exited_lane(me, l);
        if (f.state != AT_WARP_OP || f.op != OP_PTX || f.line != t.line || std::strcmp(f.file, t.file) != 0)
            all = false;
    }
    if (!all) {
        resolve_warp(base);
        run_next();
        return;
    }
    Lane* every[32];
    for (unsigned l = 0; l < 32; ++l) every[l] = reinterpret_cast<Lane*>(warp[l].value);
    compute(every, 32);
    for (unsigned l = 0; l < 32; ++l) warp[l].state = RUNNABLE;
    ++g.warp_epoch[(base >> 5) & 31];
    // as warp_op: the next warp goes on first, then this warp's lanes, lowest first
    for (unsigned k = 32, i = (base + 32) % g.n; k < g.n; ++k, i = i + 1 == g.n ? 0 : i + 1)
        if (g.fibers[i].state == RUNNABLE && (i & ~31u) != base) { switch_to(i); return; }
    if (base != g.cur) switch_to(base);
}

// ---- mma.sync: D (16 x 8, FP32) = A (16 x k) B (k x 8) + C, from the lanes' fragments --------------------
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16" and "m16n8k8"): group g = lane / 4, t = lane % 4.
// m16n8k16 (two 16-bit values a register, the lower in the low half): a0 (g, 2t..2t+1), a1 (g+8, 2t..),
// a2 (g, 2t+8..), a3 (g+8, 2t+8..); b0 (k = 2t..2t+1, n = g), b1 (k = 2t+8.., n = g). m16n8k8 TF32 (one value a
// register): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k = t, n = g), b1 (k = t+4, n = g).
// C and D: c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1).
enum Precision { P_F16, P_BF16, P_TF32 };
GL_NOSAN inline float element(unsigned bits, Precision p)
{
    if (p == P_F16) return half_bits_to_float((unsigned short)bits);
    if (p == P_BF16) return bf16_bits_to_float((unsigned short)bits);
    float f;
    std::memcpy(&f, &bits, 4);
    return gl_tf32_operand(f);
}
GL_NOSAN inline Precision mma_precision(const char* opcode)
{
    return has(opcode, ".tf32") ? P_TF32 : has(opcode, ".bf16") ? P_BF16 : P_F16;
}

GL_NOSAN inline void mma_compute(Lane* const* lanes, unsigned)
{
    const char* opcode = lanes[0]->instr->opcode;
    const Precision p = mma_precision(opcode);
    const int K = p == P_TF32 ? 8 : 16, G = p == P_TF32 ? GL_TC_GROUP_TF32 : GL_TC_GROUP_16BIT;
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; ++l) {
        const Lane& L = *lanes[l];
        const int gr = l / 4, t = l % 4;
        if (p == P_TF32) {
            A[gr][t] = element((unsigned)L.in[0], p);
            A[gr + 8][t] = element((unsigned)L.in[1], p);
            A[gr][t + 4] = element((unsigned)L.in[2], p);
            A[gr + 8][t + 4] = element((unsigned)L.in[3], p);
            B[t][gr] = element((unsigned)L.in[4], p);
            B[t + 4][gr] = element((unsigned)L.in[5], p);
        } else {
            for (int h = 0; h < 2; ++h) {
                A[gr][2 * t + h] = element((unsigned)(L.in[0] >> (16 * h)) & 0xffffu, p);
                A[gr + 8][2 * t + h] = element((unsigned)(L.in[1] >> (16 * h)) & 0xffffu, p);
                A[gr][2 * t + 8 + h] = element((unsigned)(L.in[2] >> (16 * h)) & 0xffffu, p);
                A[gr + 8][2 * t + 8 + h] = element((unsigned)(L.in[3] >> (16 * h)) & 0xffffu, p);
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
        C[gr][2 * t] = c[0];
        C[gr][2 * t + 1] = c[1];
        C[gr + 8][2 * t] = c[2];
        C[gr + 8][2 * t + 1] = c[3];
    }
    float D[16][8];
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
            float acc = C[i][j];
            double terms[16];
            for (int k0 = 0; k0 < K; k0 += G) {
                for (int k = k0; k < k0 + G; ++k) terms[k - k0] = (double)A[i][k] * (double)B[k][j];
                acc = gl_tc_add(acc, terms, G);
            }
            D[i][j] = acc;
        }
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

// ---- the statement -------------------------------------------------------------------------------------------
GL_NOSAN inline void run_instr(Thread& t, const Instr& in)
{
    const char* op = in.opcode;
    if (starts(op, "mma.sync.")) return run_mma(t, in);
    if (starts(op, "ldmatrix.")) return run_ldmatrix(t, in);
    char what[160];
    std::snprintf(what, sizeof what, "asm(\"%s ...\")", op);
    unsupported("inline PTX assembly (asm)", what);
}

GL_NOSAN __attribute__((noinline)) inline void run(const char* text, const char* file, int line,
                                                    std::initializer_list<Op> operands)
{
    Op c[160];
    int n = 0;
    for (const Op& o : operands) {
        if (n == 160) break;
        c[n++] = o;
    }
    Thread t{};
    t.program = program_for(text);
    t.c = c;
    t.n_c = n;
    t.file = file;
    t.line = line;
    t.pc = __builtin_return_address(0);
    if (t.program->error[0]) stop(t, t.program->error);
    for (int i = 0; i < t.program->n_instr; ++i) {
        const Instr& in = t.program->instr[i];
        if (in.pred >= 0 && ((t.regs[in.pred] != 0) == in.negated)) continue;
        run_instr(t, in);
    }
    for (int i = 0; i < n; ++i)
        if (c[i].mode != 'i') std::memcpy(c[i].addr, &c[i].bits, c[i].size);
}

}  // namespace ptx
}  // namespace gl_emu
