// exercises/axpy.cu — z = a * x + y (chapter 1).
//
// Two FLOPs for every 12 bytes moved (x and y read, z written): an arithmetic
// intensity of 1/6 FLOP per byte, far left on the roofline, so its speed is the
// memory's. One thread per element, blocks of 256, enough blocks to cover n (any n
// >= 1).
// Complete the TODO; gl.exercises.check("axpy", code) runs it at awkward sizes.

__global__ void axpy(const float* x, const float* y, float* z, float a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    // TODO: for an i inside the vectors, write z[i]
}
