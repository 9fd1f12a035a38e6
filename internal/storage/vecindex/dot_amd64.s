//go:build !purego

#include "textflag.h"

// func dotsAVX2(q, vecs *float32, dim, n int, out *float32)
//
// out[i] = dot(q[:dim], vecs[i*dim:(i+1)*dim]) for i < n, with AVX2 FMA:
// four 8-wide accumulators over 32-float blocks, one over 8-float blocks,
// then scalar FMAs for the last dim%8 elements.
TEXT ·dotsAVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ vecs+8(FP), DI
	MOVQ dim+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ out+32(FP), R8

vec:
	TESTQ DX, DX
	JEQ   done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, BX

block32:
	CMPQ        BX, $32
	JLT         block8
	VMOVUPS     (SI)(AX*4), Y4
	VMOVUPS     32(SI)(AX*4), Y5
	VMOVUPS     64(SI)(AX*4), Y6
	VMOVUPS     96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ        $32, AX
	SUBQ        $32, BX
	JMP         block32

block8:
	CMPQ        BX, $8
	JLT         reduce
	VMOVUPS     (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ        $8, AX
	SUBQ        $8, BX
	JMP         block8

reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

tail:
	TESTQ       BX, BX
	JEQ         store
	VMOVSS      (SI)(AX*4), X4
	VFMADD231SS (DI)(AX*4), X4, X0
	INCQ        AX
	DECQ        BX
	JMP         tail

store:
	VMOVSS X0, (R8)
	ADDQ   $4, R8
	LEAQ   (DI)(CX*4), DI
	DECQ   DX
	JMP    vec

done:
	VZEROUPPER
	RET
