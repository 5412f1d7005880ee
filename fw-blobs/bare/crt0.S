/* Start-up code of the bare corpus programs.
 *
 * Runs under qemu-user (Linux process start: sp -> argc, argv[], NULL, envp[]) and under the
 * bare machine of mlx5-sim (sp -> a zeroed frame: argc 0). Calls main(argc, argv) and exits
 * with its return value through the exit ecall (a7 = 93).
 */
	.file "crt0.S"
	.section .text.start, "ax"
	.globl _start
	.type _start, @function
_start:
	.option push
	.option norelax
	la	gp, __global_pointer$
	.option pop
	ld	a0, 0(sp)
	addi	a1, sp, 8
	andi	sp, sp, -16
	call	main
	li	a7, 93
	ecall
1:	j	1b
	.size _start, . - _start
