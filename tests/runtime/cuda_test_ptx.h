// Hand-written PTX kernels for the CUDA backend tests, following docs/abi.md (buffers are .u64
// device pointers, scalars by value). The GPU machine JIT-compiles them (no cubin needed).
#pragma once

namespace quiver::test {

// saxpy(const float* x, float* y, float a, uint32_t n): y[i] = fma(a, x[i], y[i]) for i < n.
inline constexpr const char* kSaxpyPtx = R"(//
// hand-written for quiver's CUDA backend test
.version 7.8
.target sm_80
.address_size 64

.visible .entry qv_k0_saxpy(
	.param .u64 qv_k0_saxpy_param_0,
	.param .u64 qv_k0_saxpy_param_1,
	.param .f32 qv_k0_saxpy_param_2,
	.param .u32 qv_k0_saxpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [qv_k0_saxpy_param_0];
	ld.param.u64 	%rd2, [qv_k0_saxpy_param_1];
	ld.param.f32 	%f1, [qv_k0_saxpy_param_2];
	ld.param.u32 	%r1, [qv_k0_saxpy_param_3];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L__done;
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mul.wide.u32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd3, %rd5;
	add.s64 	%rd7, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f1, %f2, %f3;
	st.global.f32 	[%rd7], %f4;
$L__done:
	ret;
}
)";


// handshake(uint32_t* flags, uint32_t me, uint32_t other, uint32_t spins), one thread: raises
// flags[me], then polls flags[other] up to `spins` times and records in flags[2 + me] whether it
// was seen (1) or not (2). Two launches see each other only when they run at the same time.
inline constexpr const char* kHandshakePtx = R"(//
// hand-written for quiver's CUDA backend test
.version 7.8
.target sm_80
.address_size 64

.visible .entry qv_k9_handshake(
	.param .u64 qv_k9_handshake_param_0,
	.param .u32 qv_k9_handshake_param_1,
	.param .u32 qv_k9_handshake_param_2,
	.param .u32 qv_k9_handshake_param_3
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [qv_k9_handshake_param_0];
	ld.param.u32 	%r1, [qv_k9_handshake_param_1];
	ld.param.u32 	%r2, [qv_k9_handshake_param_2];
	ld.param.u32 	%r3, [qv_k9_handshake_param_3];
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	mul.wide.u32 	%rd5, %r2, 4;
	add.s64 	%rd6, %rd2, %rd5;
	add.s64 	%rd7, %rd4, 8;
	mov.u32 	%r4, 1;
	st.volatile.global.u32 	[%rd4], %r4;
	membar.sys;
	mov.u32 	%r5, 0;
$L__wait:
	ld.volatile.global.u32 	%r6, [%rd6];
	setp.ne.u32 	%p1, %r6, 0;
	@%p1 bra 	$L__seen;
	add.u32 	%r5, %r5, 1;
	setp.lt.u32 	%p2, %r5, %r3;
	@%p2 bra 	$L__wait;
	mov.u32 	%r7, 2;
	st.volatile.global.u32 	[%rd7], %r7;
	ret;
$L__seen:
	st.volatile.global.u32 	[%rd7], %r4;
	ret;
}
)";

}  // namespace quiver::test
