// Whether a process has CUDA in it, asked after each library load: the agent
// touches CUDA and CUPTI only in a process that has.
#pragma once
#include <string>
#include <vector>

namespace ptprof::agent {

// The paths of the libraries loaded in this process (dl_iterate_phdr).
std::vector<std::string> loaded_libraries();

// Whether this process has loaded libcudart, libcuda or torch's CUDA
// library. Allocates nothing: it is asked after every dlopen until it is true.
bool cuda_library_loaded();

}  // namespace ptprof::agent
