// Shape-general exports on the GPU, as a user's program runs them: for each header `kevo export
// --general` wrote into $KEVO_EXPORT_SHAPES_DIR (bench/export_shapes_gpu.sh), nvcc builds one
// program around it that takes the shape on its command line; unseen shapes (a seed of their own,
// not the export's) that its supported_shape() accepts run through kevo_<task>::run (outputs
// poisoned, twice) and must match the task's reference (LibTorch, on the GPU, no TF32) within the
// task's tolerance, inputs untouched. One line per task: shapes verified at export, shapes run,
// the largest error as a fraction of the tolerance, pass or fail. Skips without a GPU, nvcc or
// the folder.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/task.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/inputs.h"
#include "eval/torch_graph.h"
#include "search/unseen_shapes.h"
#include "store/export.h"
#include "tests/support/contract_files.h"

namespace kevo::eval {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";
constexpr int kWanted = 24;                           // unseen shapes run per task (at least 20)
constexpr int64_t kMaxBytes = int64_t{128} << 20;     // inputs plus outputs of one, through files

std::string nvcc() { return KEVO_NVCC; }
std::string cuda_lib_dir() { return nvcc().substr(0, nvcc().rfind('/')) + "/../lib64"; }

std::string shell(const std::string& cmd, int* rc) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  *rc = p ? pclose(p) : -1;
  return out;
}

// The program: `program DIR AXES... BYTES...` (var axes in contract order, then each tensor's
// bytes, inputs then outputs). Exit 7 when supported_shape() refuses the shape (with DIR "-", 0
// when it accepts it, nothing run); 0 when every call behaved, outputs in DIR/out<i>.bin.
std::string program(const Task& task, const std::string& header) {
  const std::string ns = store::export_namespace(task);
  const size_t n_in = task.inputs.size(), n_out = task.outputs.size();
  size_t n_axes = 0;
  for (const Axis& a : task.axes) n_axes += a.value ? 0 : 1;
  std::string axes, ptrs;
  for (size_t i = 0; i < n_axes; ++i) axes += ", ax[" + std::to_string(i) + "]";
  for (size_t i = 0; i < n_in + n_out; ++i) {
    const TensorDecl& t = i < n_in ? task.inputs[i] : task.outputs[i - n_in];
    ptrs += std::string(i ? ", " : "") + "static_cast<" + (i < n_in ? "const " : "") + cuda_type_name(t.dtype) +
            "*>(buf[" + std::to_string(i) + "])";
  }
  const std::string axis_args = axes.empty() ? "" : axes.substr(2);
  std::ostringstream m;
  m << "#include \"" << header << "\"\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <string>\n"
    << "#include <vector>\n\n"
    << "#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \\\n"
    << "  std::fprintf(stderr, \"%s: %s\\n\", #call, cudaGetErrorString(e_)); return 1; } } while (0)\n\n"
    << "int main(int argc, char** argv) {\n"
    << "  const int n_axes = " << n_axes << ", n_in = " << n_in << ", n_out = " << n_out << ";\n"
    << "  if (argc != 2 + n_axes + n_in + n_out) return 2;\n"
    << "  const std::string dir = argv[1];\n"
    << "  long long ax[" << (n_axes ? n_axes : 1) << "] = {0};\n"
    << "  for (int i = 0; i < n_axes; ++i) ax[i] = std::atoll(argv[2 + i]);\n"
    << "  std::vector<size_t> bytes;\n"
    << "  for (int i = 0; i < n_in + n_out; ++i) bytes.push_back(std::strtoull(argv[2 + n_axes + i], nullptr, 10));\n"
    << "  if (!" << ns << "::supported_shape(" << axis_args << ")) return 7;\n"
    << "  if (dir == \"-\") return 0;  // a probe: is the shape supported?\n"
    << "  std::vector<void*> buf(n_in + n_out);\n  std::vector<std::vector<char>> host(n_in);\n"
    << "  for (int i = 0; i < n_in + n_out; ++i) CHECK(cudaMalloc(&buf[i], bytes[i] ? bytes[i] : 1));\n"
    << "  for (int i = 0; i < n_in; ++i) {\n"
    << "    host[i].resize(bytes[i]);\n"
    << "    FILE* f = std::fopen((dir + \"/in\" + std::to_string(i) + \".bin\").c_str(), \"rb\");\n"
    << "    if (!f || std::fread(host[i].data(), 1, bytes[i], f) != bytes[i]) return 3;\n    std::fclose(f);\n"
    << "    CHECK(cudaMemcpy(buf[i], host[i].data(), bytes[i], cudaMemcpyHostToDevice));\n  }\n"
    << "  const size_t ws = " << ns << "::workspace_bytes(" << axis_args << ");\n"
    << "  void* workspace = nullptr;\n  if (ws > 0) CHECK(cudaMalloc(&workspace, ws));\n"
    << "  cudaStream_t stream;\n  CHECK(cudaStreamCreate(&stream));\n"
    << "  for (int rep = 0; rep < 2; ++rep) {\n"
    << "    for (int i = n_in; i < n_in + n_out; ++i) CHECK(cudaMemsetAsync(buf[i], 0xff, bytes[i], stream));\n"
    << "    if (ws > 0) CHECK(cudaMemsetAsync(workspace, 0xff, ws, stream));\n"
    << "    CHECK(" << ns << "::run(" << ptrs << (axis_args.empty() ? "" : ", " + axis_args) << ", stream, workspace, ws));\n"
    << "    CHECK(cudaStreamSynchronize(stream));\n  }\n"
    << "  for (int i = n_in; i < n_in + n_out; ++i) {\n"
    << "    std::vector<char> out(bytes[i]);\n"
    << "    CHECK(cudaMemcpy(out.data(), buf[i], bytes[i], cudaMemcpyDeviceToHost));\n"
    << "    FILE* f = std::fopen((dir + \"/out\" + std::to_string(i - n_in) + \".bin\").c_str(), \"wb\");\n"
    << "    if (!f || std::fwrite(out.data(), 1, bytes[i], f) != bytes[i]) return 5;\n    std::fclose(f);\n  }\n"
    << "  for (int i = 0; i < n_in; ++i) {\n"
    << "    std::vector<char> back(bytes[i]);\n"
    << "    CHECK(cudaMemcpy(back.data(), buf[i], bytes[i], cudaMemcpyDeviceToHost));\n"
    << "    if (std::memcmp(back.data(), host[i].data(), bytes[i]) != 0) return 6;\n  }\n"
    << "  return 0;\n}\n";
  return m.str();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ExportShapesGpu, ShapeGeneralHeadersMatchTheReferenceOnUnseenShapesInAUsersProgram) {
  const DriverStatus& s = cuda_driver_status();
  if (!s.available || s.device_count == 0) GTEST_SKIP() << "no CUDA GPU: " << s.error;
  if (nvcc().empty() || access(nvcc().c_str(), X_OK) != 0) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  const char* env = std::getenv("KEVO_EXPORT_SHAPES_DIR");
  if (!env) GTEST_SKIP() << "KEVO_EXPORT_SHAPES_DIR is not set (bench/export_shapes_gpu.sh sets it)";
  const std::string dir = env;
  // Every header's program, compiled side by side (nvcc of a large template takes a while).
  std::vector<Task> tasks;
  std::vector<std::string> headers, works;
  std::string compile_all;
  for (const std::string& file : testing::contract_files(kRoot, "tasks")) {
    Task task = load_task(kRoot + file);
    const std::string header = dir + "/" + store::export_file_name(task);
    struct stat st {};
    if (::stat(header.c_str(), &st) != 0) continue;
    const std::string text = read_text(header);
    const bool cublaslt = text.find("-lcublasLt") != std::string::npos, cudnn = text.find("-lcudnn") != std::string::npos;
    const std::string work = ::testing::TempDir() + "kevo_export_shapes_" + task.name + "_" + std::to_string(getpid());
    mkdir(work.c_str(), 0755);
    std::ofstream(work + "/main.cu") << program(task, header);
    compile_all += nvcc() + " -std=c++17 -O2 -arch=" + device_arch(0) + " " + work + "/main.cu -o " + work + "/program" +
                   (cublaslt ? " -lcublasLt" : "") + (cudnn ? " -lcudnn" : "") + " -Xlinker -rpath -Xlinker " +
                   cuda_lib_dir() + " > " + work + "/nvcc.log 2>&1 &\n";
    tasks.push_back(std::move(task));
    headers.push_back(header);
    works.push_back(work);
  }
  int rc = 0;
  shell("set +e\n" + compile_all + "wait", &rc);
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    const Task& task = tasks[ti];
    const std::string& work = works[ti];
    const std::string text = read_text(headers[ti]);
    std::smatch verified;
    std::regex_search(text, verified, std::regex("Verified against the reference on ([0-9]+) unseen shape"));
    ASSERT_FALSE(verified.empty()) << headers[ti] << " is not a shape-general header (kevo export --general)";
    struct stat built {};
    ASSERT_EQ(::stat((work + "/program").c_str(), &built), 0) << task.name << ": nvcc failed:\n" << read_text(work + "/nvcc.log");
    std::string log;

    // Unseen shapes of the contract's ranges (tasks/ declares them); the header says which it takes.
    search::UnseenShapeOptions o;
    o.seed = 20261203;  // not the export's: these shapes were not verified there
    o.count = 4 * kWanted;
    o.max_bytes = kMaxBytes;
    const std::vector<search::AxisValues> shapes =
        search::draw_unseen_shapes(task, [](const search::AxisValues&) { return true; }, o);
    int ran = 0, refused = 0, failed = 0;
    double worst = 0;
    for (const search::AxisValues& shape : shapes) {
      if (ran >= kWanted) break;
      Workload w;
      w.axes = shape;
      std::string axis_args, zeros;
      for (const Axis& a : task.axes)
        if (!a.value) axis_args += " " + std::to_string(shape.at(a.name));
      for (size_t i = 0; i < task.inputs.size() + task.outputs.size(); ++i) zeros += " 0";
      shell(work + "/program -" + axis_args + zeros, &rc);
      if (WIFEXITED(rc) && WEXITSTATUS(rc) == 7) {
        ++refused;
        continue;
      }
      std::vector<torch::Tensor> inputs = make_inputs(task, w, 7000 + ran, torch::kCUDA);
      std::string args = " " + work + axis_args;
      std::vector<int64_t> bytes;
      for (size_t i = 0; i < inputs.size(); ++i) {
        torch::Tensor t = inputs[i].contiguous().cpu();
        bytes.push_back(t.numel() * t.element_size());
        std::ofstream(work + "/in" + std::to_string(i) + ".bin", std::ios::binary)
            .write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(bytes.back()));
      }
      for (const TensorDecl& out : task.outputs) bytes.push_back(numel(task.shape_of(out, w)) * dtype_size(out.dtype));
      for (int64_t b : bytes) args += " " + std::to_string(b);
      log = shell(work + "/program" + args, &rc);
      ++ran;
      if (rc != 0) {
        ++failed;
        ADD_FAILURE() << task.name << " " << search::shape_text(task, shape) << ": the program failed (" << rc << "): " << log;
        continue;
      }
      std::vector<torch::Tensor> expected = run_graph(task.graph(w), inputs);
      for (size_t i = 0; i < task.outputs.size(); ++i) {
        const TensorDecl& out = task.outputs[i];
        std::vector<char> data(static_cast<size_t>(bytes[inputs.size() + i]));
        std::ifstream(work + "/out" + std::to_string(i) + ".bin", std::ios::binary)
            .read(data.data(), static_cast<std::streamsize>(data.size()));
        torch::Tensor got = torch::from_blob(data.data(), task.shape_of(out, w),
                                             torch::TensorOptions().dtype(to_torch(out.dtype)))
                                .to(torch::kCUDA)
                                .to(torch::kFloat64);
        torch::Tensor want = expected[i].to(torch::kFloat64);
        torch::Tensor ratio = (got - want).abs() / (task.tolerance.atol + task.tolerance.rtol * want.abs());
        const double r = ratio.nan_to_num(INFINITY).max().item<double>();
        worst = std::max(worst, r);
        if (!(r <= 1)) {
          ++failed;
          ADD_FAILURE() << task.name << " " << search::shape_text(task, shape) << " output " << out.name
                        << ": error " << r << " of the tolerance; program in " << work;
        }
      }
    }
    const bool pass = failed == 0 && ran >= 20;
    std::printf("%-22s verified %s at export, ran %d unseen shapes (%d refused by supported_shape), max error %.3g of "
                "the tolerance: %s\n",
                task.name.c_str(), verified[1].str().c_str(), ran, refused, worst, pass ? "pass" : "FAIL");
    EXPECT_GE(ran, 20) << task.name << ": too few unseen shapes inside its conditions";
  }
  EXPECT_GE(tasks.size(), 6u) << "bench/export_shapes_gpu.sh exports at least 6 tasks into " << dir;
}

}  // namespace
}  // namespace kevo::eval
