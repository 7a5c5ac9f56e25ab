// The ptxas resource report parser, on log text captured from NVRTC 13.0 and on the older
// layout of CUDA 11/12, so that it is tested independently of the NVRTC installed here.
#include "eval/ptxas_report.h"

#include <cstring>
#include <gtest/gtest.h>

namespace kevo::eval {
namespace {

// NVRTC 13.0, -arch=sm_90a --ptxas-options=-v: a template kernel, a kernel reading __constant__
// memory, one with 4 KiB of static shared memory, and one with a 2 KiB local array.
constexpr const char* kNvrtc13Hopper = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z4tmplILi256ELi4EEvPf' for 'sm_90a'
ptxas info    : Function properties for _Z4tmplILi256ELi4EEvPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 4.694 ms
ptxas info    : Compiling entry function '_Z4usecPf' for 'sm_90a'
ptxas info    : Function properties for _Z4usecPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 1.505 ms
ptxas info    : Compiling entry function '_Z5shmemPf' for 'sm_90a'
ptxas info    : Function properties for _Z5shmemPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 1.578 ms
ptxas info    : Compiling entry function 'spill' for 'sm_90a'
ptxas info    : Function properties for spill
ptxas         .     2048 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 2048 bytes cumulative stack size
ptxas info    : Compile time = 16.065 ms
)";

// The same source for sm_80: this ptxas still prints constant banks there.
constexpr const char* kNvrtc13Ampere = R"(ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function '_Z4tmplILi256ELi4EEvPf' for 'sm_80'
ptxas info    : Function properties for _Z4tmplILi256ELi4EEvPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 6.055 ms
ptxas info    : Compiling entry function '_Z5shmemPf' for 'sm_80'
ptxas info    : Function properties for _Z5shmemPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 4096 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 1.002 ms
)";

// NVRTC 13.0, sm_90a, --warn-on-spills: register pressure under __launch_bounds__(1024, 2).
constexpr const char* kNvrtc13Spills = R"(ptxas warning : Registers are spilled to local memory in function 'pressure', 916 bytes spill stores, 2116 bytes spill loads
ptxas info    : 512 bytes gmem
ptxas info    : Compiling entry function 'pressure' for 'sm_90a'
ptxas info    : Function properties for pressure
ptxas         .     928 bytes stack frame, 916 bytes spill stores, 2116 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 928 bytes cumulative stack size
ptxas info    : Compile time = 138.693 ms
)";

// NVRTC 13.0, sm_90a: a kernel calling a __noinline__ device function; ptxas reports the
// device function after the kernel, and its frame must not be taken for the kernel's (the
// helper's frame is edited to non-zero here so that a mix-up shows).
constexpr const char* kNvrtc13DeviceFunction = R"(candidate.cu(4): warning #177-D: variable "unused" was declared but never referenced
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z6callerILi256EEvPfPKfi' for 'sm_90a'
ptxas info    : Function properties for _Z6callerILi256EEvPfPKfi
ptxas         .     256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 133.768 ms
ptxas info    : Function properties for _Z6helperPKfi
ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
)";

// The layout of CUDA 11 and 12 (written for this test in that layout): frame lines without
// the "ptxas ." prefix, no barrier count, device functions before kernels, several banks.
constexpr const char* kOlderLayout = R"(ptxas info    : 64 bytes gmem, 72 bytes cmem[3]
ptxas info    : Function properties for _Z5valuei
    24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z6reduceILi128EEvPKfPfi' for 'sm_80'
ptxas info    : Function properties for _Z6reduceILi128EEvPKfPfi
    696 bytes stack frame, 800 bytes spill stores, 1872 bytes spill loads
ptxas info    : Used 63 registers, 712 bytes cumulative stack size, 8192 bytes smem, 324 bytes cmem[0], 4 bytes cmem[2]
ptxas info    : Compiling entry function 'plain' for 'sm_80'
ptxas info    : Function properties for plain
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 4096+16 bytes smem, 352 bytes cmem[0], 1 textures
)";

TEST(PtxasReport, ReadsEveryKernelOfAnNvrtc13HopperLog) {
  PtxasReport r = parse_ptxas_report(kNvrtc13Hopper);
  ASSERT_EQ(r.kernels.size(), 4u);
  EXPECT_EQ(r.kernels[0].name, "_Z4tmplILi256ELi4EEvPf");
  EXPECT_EQ(r.kernels[0].registers, 10);
  const KernelResources* shmem = r.find("_Z5shmemPf");
  ASSERT_NE(shmem, nullptr);
  EXPECT_EQ(shmem->registers, 12);
  EXPECT_EQ(shmem->barriers, 1);
  EXPECT_EQ(shmem->shared_bytes, 4096);
  EXPECT_EQ(shmem->stack_frame_bytes, 0);
  const KernelResources* spill = r.find("spill");
  ASSERT_NE(spill, nullptr);
  EXPECT_EQ(spill->registers, 32);
  EXPECT_EQ(spill->stack_frame_bytes, 2048);
  EXPECT_EQ(spill->spill_store_bytes, 0);
  EXPECT_EQ(spill->shared_bytes, 0);
  EXPECT_EQ(spill->constant_bytes, 0);  // this ptxas does not print banks for sm_90
  EXPECT_EQ(r.global_bytes, 0);
  EXPECT_EQ(r.find("_Z5shmem"), nullptr);
}

TEST(PtxasReport, ReadsConstantBanksWherePtxasPrintsThem) {
  PtxasReport r = parse_ptxas_report(kNvrtc13Ampere);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].constant_bytes, 360);
  EXPECT_EQ(r.kernels[1].constant_bytes, 360);
  EXPECT_EQ(r.kernels[1].shared_bytes, 4096);
  EXPECT_EQ(r.module_constant_bytes, 256);
}

TEST(PtxasReport, ReadsSpillsAndTheStackFrame) {
  PtxasReport r = parse_ptxas_report(kNvrtc13Spills);
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelResources& k = r.kernels[0];
  EXPECT_EQ(k.name, "pressure");
  EXPECT_EQ(k.registers, 32);
  EXPECT_EQ(k.stack_frame_bytes, 928);
  EXPECT_EQ(k.spill_store_bytes, 916);
  EXPECT_EQ(k.spill_load_bytes, 2116);
  EXPECT_EQ(r.global_bytes, 512);
}

TEST(PtxasReport, KeepsDeviceFunctionFramesOffTheKernel) {
  PtxasReport r = parse_ptxas_report(kNvrtc13DeviceFunction);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].stack_frame_bytes, 256);
  EXPECT_EQ(r.kernels[0].spill_store_bytes, 0);
  EXPECT_EQ(r.kernels[0].shared_bytes, 1024);
  EXPECT_EQ(r.kernels[0].barriers, 1);
  EXPECT_EQ(r.kernels[0].registers, 40);
}

TEST(PtxasReport, ReadsTheOlderLayout) {
  PtxasReport r = parse_ptxas_report(kOlderLayout);
  ASSERT_EQ(r.kernels.size(), 2u);
  const KernelResources& reduce = r.kernels[0];
  EXPECT_EQ(reduce.name, "_Z6reduceILi128EEvPKfPfi");
  EXPECT_EQ(reduce.registers, 63);
  EXPECT_EQ(reduce.barriers, 0);
  EXPECT_EQ(reduce.shared_bytes, 8192);
  EXPECT_EQ(reduce.constant_bytes, 328);
  EXPECT_EQ(reduce.stack_frame_bytes, 696);
  EXPECT_EQ(reduce.spill_store_bytes, 800);
  EXPECT_EQ(reduce.spill_load_bytes, 1872);
  EXPECT_EQ(r.kernels[1].shared_bytes, 4112);
  EXPECT_EQ(r.kernels[1].constant_bytes, 352);
  EXPECT_EQ(r.global_bytes, 64);
  EXPECT_EQ(r.module_constant_bytes, 72);
}

TEST(PtxasReport, IgnoresLogsWithoutAReport) {
  EXPECT_TRUE(parse_ptxas_report("").kernels.empty());
  EXPECT_TRUE(parse_ptxas_report("candidate.cu(3): error: expected a \";\"\n1 error detected\n").kernels.empty());
  // A frame line with no "Function properties" before it, and a "Used" line before any entry.
  PtxasReport r = parse_ptxas_report("ptxas info    : Used 9 registers\n    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n");
  EXPECT_TRUE(r.kernels.empty());
}

// A minimal ELF64 image with the section layout of a CUBIN: .shstrtab, per-kernel bank 0 and
// the module's bank 3.
std::string tiny_cubin() {
  const std::string names = std::string("\0.shstrtab\0.nv.constant0.kern\0.nv.constant3\0.nv.shared.kern\0", 60);
  std::string elf(64, '\0');
  elf.replace(0, 5, "\x7f" "ELF\x02");
  uint64_t names_at = elf.size();
  elf += names;
  uint64_t table = elf.size();
  struct Section {
    uint32_t name;
    uint64_t offset, size;
  };
  const Section sections[] = {{0, 0, 0}, {1, names_at, names.size()}, {11, 0, 0x218}, {30, 0, 0x100}, {44, 0, 0x400}};
  for (const Section& s : sections) {
    char header[64] = {};
    std::memcpy(header, &s.name, 4);
    std::memcpy(header + 24, &s.offset, 8);
    std::memcpy(header + 32, &s.size, 8);
    elf.append(header, 64);
  }
  uint16_t entry = 64, count = 5, names_index = 1;
  std::memcpy(&elf[0x28], &table, 8);
  std::memcpy(&elf[0x3a], &entry, 2);
  std::memcpy(&elf[0x3c], &count, 2);
  std::memcpy(&elf[0x3e], &names_index, 2);
  return elf;
}

TEST(PtxasReport, TakesConstantBanksFromTheCubinWherePtxasIsSilent) {
  PtxasReport r;
  r.kernels.push_back({});
  r.kernels[0].name = "kern";
  r.kernels.push_back({});
  r.kernels[1].name = "other";
  r.kernels[1].constant_bytes = 360;
  add_constant_banks_from_cubin(r, tiny_cubin());
  EXPECT_EQ(r.kernels[0].constant_bytes, 0x218);
  EXPECT_EQ(r.kernels[1].constant_bytes, 360);  // what ptxas said stands
  EXPECT_EQ(r.module_constant_bytes, 0x100);
}

TEST(PtxasReport, LeavesTheReportAloneForBytesThatAreNoElf) {
  std::string elf = tiny_cubin();
  for (std::string bytes : {std::string("not an elf file at all, but long enough to be read as one...."),
                            elf.substr(0, 100), std::string(elf).replace(0x28, 8, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8)}) {
    PtxasReport r;
    r.kernels.push_back({});
    r.kernels[0].name = "kern";
    add_constant_banks_from_cubin(r, bytes);
    EXPECT_EQ(r.kernels[0].constant_bytes, 0);
    EXPECT_EQ(r.module_constant_bytes, 0);
  }
}

}  // namespace
}  // namespace kevo::eval
