; Each thread t sums 1..t into out[t]: a loop whose trip count depends on the lane,
; so the lanes of a warp leave it at different times and reconverge at `done`.
.grid 1
.block 8
.param 0 0          ; out: byte address of word 0

    s2r r0, tid             ; r0 = t
    ldp r1, 0               ; r1 = &out
    add r2, rz, 0           ; r2 = sum = 0
    add r3, rz, 1           ; r3 = i = 1
loop:
    setp.gt p0, r3, r0      ; i > t ?
    @p0 bra done
    add r2, r2, r3          ; sum += i
    add r3, r3, 1
    bra loop
done:
    shl r4, r0, 2
    add r4, r4, r1
    st [r4+0], r2           ; out[t] = sum
    exit
