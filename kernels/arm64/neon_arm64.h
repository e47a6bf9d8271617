// Vector instructions Go's arm64 assembler lacks (the float arithmetic
// and compares, and a few others), as WORD encodings. Operands are
// register numbers in the architecture's order: destination first, then
// the sources, as in the Arm manual; every float operation is on four
// single-precision lanes (.4S), every bitwise one on the whole register.

#define V_FADD(d, n, m) WORD $(0x4e20d400|((m)<<16)|((n)<<5)|(d))  // FADD Vd.4S, Vn.4S, Vm.4S: n + m
#define V_FSUB(d, n, m) WORD $(0x4ea0d400|((m)<<16)|((n)<<5)|(d))  // FSUB: n - m
#define V_FMUL(d, n, m) WORD $(0x6e20dc00|((m)<<16)|((n)<<5)|(d))  // FMUL: n·m, rounded (never fused)
#define V_FDIV(d, n, m) WORD $(0x6e20fc00|((m)<<16)|((n)<<5)|(d))  // FDIV: n / m
#define V_FCMGT(d, n, m) WORD $(0x6ea0e400|((m)<<16)|((n)<<5)|(d)) // FCMGT: all ones where n > m (false for NaN)
#define V_FCMGE(d, n, m) WORD $(0x6e20e400|((m)<<16)|((n)<<5)|(d)) // FCMGE: all ones where n >= m
#define V_FCMGEZ(d, n) WORD $(0x6ea0c800|((n)<<5)|(d))             // FCMGE #0: all ones where n >= 0 (-0 too)
#define V_FABS(d, n) WORD $(0x4ea0f800|((n)<<5)|(d))               // FABS: clears the sign bits
#define V_FNEG(d, n) WORD $(0x6ea0f800|((n)<<5)|(d))               // FNEG: flips the sign bits
#define V_FMOV1(d) WORD $(0x4f03f600|(d))                          // FMOV Vd.4S, #1.0
#define V_FMOV2(d) WORD $(0x4f00f400|(d))                          // FMOV Vd.4S, #2.0
#define V_ADD(d, n, m) WORD $(0x4ea08400|((m)<<16)|((n)<<5)|(d))   // ADD Vd.4S: integer n + m
#define V_SUB(d, n, m) WORD $(0x6ea08400|((m)<<16)|((n)<<5)|(d))   // SUB Vd.4S: integer n - m
#define V_MUL(d, n, m) WORD $(0x4ea09c00|((m)<<16)|((n)<<5)|(d))   // MUL Vd.4S: integer n·m
#define V_NEG(d, n) WORD $(0x6ea0b800|((n)<<5)|(d))                // NEG Vd.4S: integer -n
#define V_SHL(d, n, s) WORD $(0x4f205400|((s)<<16)|((n)<<5)|(d))   // SHL Vd.4S, Vn.4S, #s
#define V_AND(d, n, m) WORD $(0x4e201c00|((m)<<16)|((n)<<5)|(d))   // AND Vd.16B: n & m
#define V_BIC(d, n, m) WORD $(0x4e601c00|((m)<<16)|((n)<<5)|(d))   // BIC Vd.16B: n &^ m
#define V_BIT(d, n, m) WORD $(0x6ea01c00|((m)<<16)|((n)<<5)|(d))   // BIT: d = n where m's bits are set
#define V_BIF(d, n, m) WORD $(0x6ee01c00|((m)<<16)|((n)<<5)|(d))   // BIF: d = n where m's bits are clear
#define V_TBL2(d, n, m) WORD $(0x4e002000|((m)<<16)|((n)<<5)|(d))  // TBL Vd.16B, {Vn, Vn+1}, Vm.16B

// CLAMP(v, lo, hi, t) clamps v as the references' two ifs do, with t a
// scratch register:
//
//	if lo > v { v = lo }
//	if hi < v { v = hi }
//
// so a NaN v stays NaN and a zero keeps its sign.
#define CLAMP(v, lo, hi, t) \
	V_FCMGT(t, lo, v) \
	V_BIT(v, lo, t)   \
	V_FCMGT(t, v, hi) \
	V_BIT(v, hi, t)
