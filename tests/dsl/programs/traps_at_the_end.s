; Many kinds of instruction, then a misaligned store by thread 5 of block 1 (warp 3, lane 1)
; stops the machine.
.grid 2
.block 6
.param 0 16
.param 1 -3
.mem 0 7 -8 9 -10 0x7fffffff
    s2r r0, tid
    s2r r1, ctaid
    s2r r2, laneid
    ldp r3, 1
    ld r4, [rz+4]
    mulhi.s r5, r4, r3
    mad r6, r0, r3, r4
    abs r7, r6
    min.s r8, r7, r6
    shr.s r9, r4, 33
    setp.lt p1, r0, 2
    selp r10, r0, -1, p1
    pxor p2, p1, pt
    @p2 add r11, r1, r0
    st [rz+40], r10
    setp.eq p3, r1, 1
    setp.eq p4, r0, 5
    pand p5, p3, p4
    @p5 st [rz+2], r0
    exit
