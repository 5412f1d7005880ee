/* Every RV64C instruction (but c.ebreak) in a hand-written routine, called from C; the
 * compiler's own code is compressed too. rvc_all(x) returns a mix of every result. */
#include "bare.h"

uint64_t rvc_all(uint64_t x, uint64_t *scratch);

__asm__(
	"	.text\n"
	"	.globl rvc_all\n"
	"	.type rvc_all, @function\n"
	"rvc_all:\n"
	"	.option push\n"
	"	.option rvc\n"
	"	c.addi16sp sp, -64\n"
	"	c.sdsp ra, 56(sp)\n"
	"	c.sdsp s0, 48(sp)\n"
	"	c.sdsp s1, 40(sp)\n"
	"	c.mv s0, a0\n"          /* s0 = x */
	"	c.mv s1, a1\n"          /* s1 = scratch */
	"	c.addi4spn a2, sp, 16\n" /* a2 = sp + 16 */
	"	c.li a3, -7\n"
	"	c.sd a3, 0(a2)\n"
	"	c.ld a4, 0(a2)\n"
	"	c.sw s0, 8(a2)\n"
	"	c.lw a5, 8(a2)\n"       /* sign-extended low word of x */
	"	c.swsp a4, 12(sp)\n"
	"	c.lwsp a3, 12(sp)\n"
	"	c.ldsp a4, 16(sp)\n"
	"	c.add a5, a4\n"
	"	c.add a5, a3\n"
	"	c.lui a4, 0x1f\n"       /* 0x1f000 */
	"	c.lui a3, 0xfffe1\n"    /* -0x1f000 (nzimm sign-extended) */
	"	c.add a4, a3\n"         /* 0 */
	"	c.addi a4, 31\n"
	"	c.addi a4, -32\n"       /* -1 */
	"	c.addiw a4, 1\n"        /* 0 */
	"	c.addiw a5, 0\n"        /* sext.w a5 */
	"	c.nop\n"
	"	c.mv a0, s0\n"
	"	c.srli a0, 3\n"
	"	c.mv a1, s0\n"
	"	c.srai a1, 61\n"
	"	c.xor a0, a1\n"
	"	c.andi a1, -13\n"
	"	c.or a0, a1\n"
	"	c.and a1, a0\n"
	"	c.sub a0, a1\n"
	"	c.subw a1, a0\n"
	"	c.addw a0, a1\n"
	"	c.slli a0, 5\n"
	"	c.add a0, a5\n"
	"	c.add a0, a4\n"
	"	c.sd a0, 0(s1)\n"
	"	c.beqz a4, 1f\n"
	"	c.li a0, 1\n"           /* skipped */
	"1:	c.bnez a4, 2f\n"
	"	c.lw a1, 4(s1)\n"
	"	c.add a0, a1\n"
	"2:	c.j 3f\n"
	"	c.li a0, 2\n"           /* skipped */
	"3:	la a1, rvc_leaf\n"
	"	c.jalr a1\n"            /* a0 = rvc_leaf(a0) */
	"	c.ldsp ra, 56(sp)\n"
	"	c.ldsp s0, 48(sp)\n"
	"	c.ldsp s1, 40(sp)\n"
	"	c.addi16sp sp, 64\n"
	"	c.jr ra\n"
	"rvc_leaf:\n"
	"	c.slli a0, 1\n"
	"	c.addi a0, 3\n"
	"	c.jr ra\n"
	"	.option pop\n"
	"	.size rvc_all, . - rvc_all\n");

int main(void)
{
	uint64_t h = MIX_INIT;
	uint64_t scratch[2] = { 0, 0 };
	uint64_t x = 0xfedcba9876543210ull;
	for (int i = 0; i < 200; i++) {
		x = x * 0x5851f42d4c957f2dull + 1;
		h = mix(h, rvc_all(x, scratch));
		h = mix(h, scratch[0]);
	}
	bare_report("compressed", h);
	return (int)(h & 0x7f);
}
