/* Discovery tracer (see libcuda_trace.c): the common path of every wrapped function. A per-function stub
 * put the entry's index in %r11; save the argument registers, let trace_called() count/log the call and
 * return the real function, restore the registers and jump there (stack arguments stay untouched). */
    .text
    .globl trace_common
    .hidden trace_common
    .type trace_common, @function
trace_common:
    push %rbp
    mov %rsp, %rbp
    sub $176, %rsp
    mov %rdi, 0(%rsp)
    mov %rsi, 8(%rsp)
    mov %rdx, 16(%rsp)
    mov %rcx, 24(%rsp)
    mov %r8, 32(%rsp)
    mov %r9, 40(%rsp)
    movdqu %xmm0, 48(%rsp)
    movdqu %xmm1, 64(%rsp)
    movdqu %xmm2, 80(%rsp)
    movdqu %xmm3, 96(%rsp)
    movdqu %xmm4, 112(%rsp)
    movdqu %xmm5, 128(%rsp)
    movdqu %xmm6, 144(%rsp)
    movdqu %xmm7, 160(%rsp)
    mov %r11, %rdi
    mov %rsp, %rsi
    call trace_called
    mov %rax, %r11
    mov 0(%rsp), %rdi
    mov 8(%rsp), %rsi
    mov 16(%rsp), %rdx
    mov 24(%rsp), %rcx
    mov 32(%rsp), %r8
    mov 40(%rsp), %r9
    movdqu 48(%rsp), %xmm0
    movdqu 64(%rsp), %xmm1
    movdqu 80(%rsp), %xmm2
    movdqu 96(%rsp), %xmm3
    movdqu 112(%rsp), %xmm4
    movdqu 128(%rsp), %xmm5
    movdqu 144(%rsp), %xmm6
    movdqu 160(%rsp), %xmm7
    leave
    jmp *%r11
    .section .note.GNU-stack,"",@progbits
