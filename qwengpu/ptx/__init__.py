"""The PTX loader: CUDA kernels to QwenGPU machine code (docs/ptx.md).

    program = load_program("kernel.cu", "vector_add")    # nvcc -> PTX -> machine code
    program = compile_kernel(parse_ptx(text), "vector_add")
    print(program.listing())                             # instructions with their PTX lines

A `Program` holds the instructions, the PTX instruction each came from, the parameter words
the kernel reads and the memory variables it uses; `qwengpu.runtime.launch` lays out a launch
around it and links it.
"""

from qwengpu.ptx.compile import choose_kernel, compile_kernel, load_program
from qwengpu.ptx.nvcc import NVCC_FLAGS, compile_cuda, find_nvcc
from qwengpu.ptx.parser import parse_ptx, parse_ptx_file
from qwengpu.ptx.program import MachineLimits, Program

__all__ = ["MachineLimits", "NVCC_FLAGS", "Program", "choose_kernel", "compile_cuda",
           "compile_kernel", "find_nvcc", "load_program", "parse_ptx", "parse_ptx_file"]
