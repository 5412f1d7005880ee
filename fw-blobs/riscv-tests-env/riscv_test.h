/* A bare user-mode environment for the riscv-tests ISA suites (rv64ui / um / ua / uc / uzbb /
 * uzbs), for the mlx5-sim RISC-V engine. Written for this project; it replaces the suite's
 * env/p submodule, which sets up machine mode (CSRs, trap vectors) the engine does not have.
 *
 * Convention (riscv-tests "tohost", as spike reads it): the result is a store to the `tohost`
 * symbol of (code << 1) | 1; the machine ends the run on that store with exit code `code`:
 * 0 on success, the number of the failing test case (TESTNUM, kept in gp as in the upstream
 * env) otherwise.
 */
#ifndef RISCV_TEST_H
#define RISCV_TEST_H

#define TESTNUM gp

#define RVTEST_RV64U .macro init; .endm
#define RVTEST_RV32U .macro init; .endm

#define RVTEST_CODE_BEGIN                                               \
	.section .text.init, "ax", @progbits;                           \
	.align 6;                                                       \
	.globl _start;                                                  \
_start:                                                                 \
	li TESTNUM, 0;                                                  \
	init;

#define RVTEST_CODE_END                                                 \
	unimp

/* tohost <- t5, then spin (the machine stops at the store). */
#define RVTEST_TOHOST                                                   \
	la t6, tohost;                                                  \
	sd t5, 0(t6);                                                   \
1:	j 1b

#define RVTEST_PASS                                                     \
	fence;                                                          \
	li TESTNUM, 1;                                                  \
	li t5, 1;                                                       \
	RVTEST_TOHOST

#define RVTEST_FAIL                                                     \
	fence;                                                          \
1:	beqz TESTNUM, 1b;                                               \
	slli t5, TESTNUM, 1;                                            \
	ori t5, t5, 1;                                                  \
	RVTEST_TOHOST

#define EXTRA_DATA

#define RVTEST_DATA_BEGIN                                               \
	EXTRA_DATA                                                      \
	.pushsection .tohost, "aw", @progbits;                          \
	.align 6; .globl tohost; tohost: .dword 0; .size tohost, 8;     \
	.align 6; .globl fromhost; fromhost: .dword 0; .size fromhost, 8; \
	.popsection;                                                    \
	.align 4; .globl begin_signature; begin_signature:

#define RVTEST_DATA_END .align 4; .globl end_signature; end_signature:

#endif
