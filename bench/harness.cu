// aotirt's C benchmark harness: drives the same core functions as Python
// (libaotirt.so), so each figure here is the floor of the same operation
// from Python. Prints one JSON object per line (see bench_support.hpp).
//
//   aotirt_bench --models DIR [--device cpu|cuda] [--quick] [--cases dispatch,pipeline,copy] [--reps N]
//
// --device cpu runs the CPU cases only, --device cuda the CUDA ones only;
// --cases picks cases (all by default); --reps sets the repetitions behind
// each median (7). bench/bench.py runs `--cases dispatch --reps 1` between
// its own repetitions, so that C and Python dispatch share the host's state.
//
// The harness waits for the GPU only through aotirt_copy_to_host, like
// everything else in aotirt.

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../cuda_src/models/add_mul.h"
#include "bench_support.hpp"

namespace {

struct Options {
  std::string models;
  bool cpu = true;
  bool cuda = true;
  bool quick = false;
  std::string cases = "dispatch,pipeline,copy";

  bool runs(const std::string& name) const { return ("," + cases + ",").find("," + name + ",") != std::string::npos; }
};

std::string device_name(int32_t type) { return type == AOTIRT_DEVICE_CPU ? "cpu" : "cuda:0"; }

aotirt_tensor* upload_ones(int64_t n, int32_t device_type) {
  std::vector<float> ones(n, 1.0f);
  aotirt_tensor* t = nullptr;
  if (device_type == AOTIRT_DEVICE_CPU) {
    bench::check(aotirt_tensor_empty(1, &n, AOTIRT_DTYPE_FLOAT32, AOTIRT_DEVICE_CPU, 0, nullptr, &t), "aotirt_tensor_empty");
    std::memcpy(aotirt_tensor_data(t), ones.data(), n * sizeof(float));
  } else {
    bench::check(aotirt_tensor_upload(ones.data(), 1, &n, AOTIRT_DTYPE_FLOAT32, 0, nullptr, &t), "aotirt_tensor_upload");
  }
  return t;
}

// Reads one float back: the harness's only way of waiting for the GPU.
float read_first(aotirt_tensor* t) {
  std::vector<float> host(aotirt_tensor_numel(t));
  bench::check(aotirt_copy_to_host(t, host.data(), host.size() * sizeof(float)), "aotirt_copy_to_host");
  return host.empty() ? 0.0f : host[0];
}

// Case 1: one add_mul run per call, through a handle; beside it on CUDA the
// floor, the same kernel launched directly with no handle.
void dispatch(const Options& opt, int32_t device_type) {
  const int calls = opt.quick ? 2000 : 20000;
  std::string path = opt.models + (device_type == AOTIRT_DEVICE_CPU ? "/add_mul_cpu.so" : "/add_mul_cuda.so");
  aotirt_handle* handle = nullptr;
  bench::check(aotirt_handle_open(path.c_str(), device_type, 0, nullptr, &handle), "aotirt_handle_open");
  aotirt_tensor* x = upload_ones(1, device_type);
  aotirt_tensor* inputs[3] = {x, x, x};
  aotirt_tensor* out = nullptr;
  auto run_once = [&] {
    aotirt_tensor* fresh = nullptr;
    bench::check(aotirt_handle_run(handle, inputs, 3, &fresh, 1), "aotirt_handle_run");
    aotirt_tensor_free(out);  // as Python does when the name is rebound
    out = fresh;
  };
  for (int i = 0; i < 1000; ++i) run_once();
  read_first(out);

  double us = bench::median_of([&] {
    double start = bench::now_seconds();
    for (int i = 0; i < calls; ++i) run_once();
    double elapsed = bench::now_seconds() - start;
    read_first(out);  // drain outside the timed region
    return elapsed / calls * 1e6;
  });
  bench::Record().text("case", "dispatch").text("device", device_name(device_type)).text("api", "c")
      .number("calls", calls).number("us_per_call", us).emit();

  // The host's own cost per run: batches short enough that the launch queue
  // never fills (so the GPU's pace cannot set the host's), drained between
  // batches outside the timed region. This is the figure to compare with
  // Python's; the one above also includes the GPU's throughput once the
  // queue is full.
  constexpr int kBatch = 100;
  double host_us = bench::median_of([&] {
    double elapsed = 0.0;
    for (int done = 0; done < calls; done += kBatch) {
      double start = bench::now_seconds();
      for (int i = 0; i < kBatch; ++i) run_once();
      elapsed += bench::now_seconds() - start;
      read_first(out);
    }
    return elapsed / calls * 1e6;
  });
  bench::Record().text("case", "dispatch").text("device", device_name(device_type)).text("api", "c_host")
      .number("calls", calls).number("us_per_call", host_us).emit();

  if (device_type == AOTIRT_DEVICE_CUDA) {
    aotirt_stream* stream = aotirt_handle_stream(handle);
    auto* a = static_cast<const float*>(aotirt_tensor_data(x));
    auto* o = static_cast<float*>(aotirt_tensor_data(out));
    double floor_us = bench::median_of([&] {
      double start = bench::now_seconds();
      for (int i = 0; i < calls; ++i) {
        int err = add_mul_cuda(a, a, a, o, 1, aotirt_stream_handle(stream));
        if (err != 0) bench::check(AOTIRT_ERROR_CUDA, "add_mul_cuda launch");
      }
      double elapsed = bench::now_seconds() - start;
      read_first(out);
      return elapsed / calls * 1e6;
    });
    bench::Record().text("case", "dispatch").text("device", "cuda:0").text("api", "c_floor")
        .number("calls", calls).number("us_per_call", floor_us).emit();
  }
  aotirt_tensor_free(out);
  aotirt_tensor_free(x);
  aotirt_handle_free(handle);
}

// Case 3: device to host through the copy routine, pageable and pinned.
void copy() {
  for (int64_t bytes : {int64_t(4), int64_t(64) << 10, int64_t(64) << 20}) {
    int64_t n = bytes / 4;
    aotirt_tensor* t = upload_ones(n, AOTIRT_DEVICE_CUDA);
    std::vector<float> pageable(n);
    float* pinned = nullptr;
    if (cudaHostAlloc(reinterpret_cast<void**>(&pinned), bytes, cudaHostAllocDefault) != cudaSuccess)
      bench::check(AOTIRT_ERROR_CUDA, "cudaHostAlloc");
    const std::pair<const char*, float*> destinations[] = {{"pageable", pageable.data()}, {"pinned", pinned}};
    for (const auto& destination : destinations) {
      const char* memory = destination.first;
      float* dst = destination.second;
      bench::check(aotirt_copy_to_host(t, dst, bytes), "aotirt_copy_to_host");
      double seconds = bench::median_of([&] {
        double start = bench::now_seconds();
        bench::check(aotirt_copy_to_host(t, dst, bytes), "aotirt_copy_to_host");
        return bench::now_seconds() - start;
      });
      bench::Record().text("case", "copy").text("api", "c").text("memory", memory).number("bytes", double(bytes))
          .number("us", seconds * 1e6).number("GBps", bytes / seconds / 1e9).emit();
    }
    cudaFreeHost(pinned);  // at the end of the case, never in a timed region
    aotirt_tensor_free(t);
  }
}

std::vector<char> read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "aotirt_bench: cannot open %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<char> data;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) data.insert(data.end(), buffer, buffer + n);
  std::fclose(f);
  return data;
}

aotirt_handle* open_with_weights(const Options& opt, const char* name, aotirt_stream* stream) {
  std::string path = opt.models + "/" + name + "_cuda.so";
  aotirt_handle* handle = nullptr;
  bench::check(aotirt_handle_open(path.c_str(), AOTIRT_DEVICE_CUDA, 0, stream, &handle), "aotirt_handle_open");
  std::vector<char> blob = read_file(opt.models + "/" + name + ".weights");
  // Sized: the core checks the file against the size the library reads.
  bench::check(aotirt_handle_update_constants_from_blob_sized(handle, reinterpret_cast<const uint8_t*>(blob.data()),
                                                              blob.size()),
               "aotirt_handle_update_constants_from_blob_sized");
  return handle;
}

// Keeps the stream busy for `ns` nanoseconds of the GPU's global timer.
// Work the host queues meanwhile then runs back to back, so events around it
// measure GPU time alone, without the gaps of the host's launches.
__global__ void hold_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

void cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "aotirt_bench: %s failed: %s: %s\n", what, cudaGetErrorName(err), cudaGetErrorString(err));
  std::exit(1);
}

// GPU time of the decoder steps of one decode, measured with the queue full:
// a hold kernel first, then events around the steps, read back only after
// the final copy (cudaEventElapsedTime is not a wait).
struct GpuTimer {
  cudaEvent_t start = nullptr, end = nullptr;
  unsigned long long hold_ns = 0;
  double enqueue_seconds = 0;  // host time to queue the steps (must be under the hold)

  GpuTimer() {
    cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    cuda_check(cudaEventCreate(&end), "cudaEventCreate");
  }
  ~GpuTimer() {
    // Not waits; failures here cannot change a figure already printed.
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(end);
  }
  void begin(cudaStream_t stream) {
    hold_kernel<<<1, 1, 0, stream>>>(hold_ns);
    cuda_check(cudaGetLastError(), "hold_kernel launch");
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
  }
  void finish(cudaStream_t stream) { cuda_check(cudaEventRecord(end, stream), "cudaEventRecord"); }
  // After the copy that waited for the stream.
  double elapsed_seconds() const {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
    return ms / 1e3;
  }
  bool queue_was_full() const { return enqueue_seconds < hold_ns / 1e9; }
};

// Case 2: the encoder once, then `steps` greedy decoder steps, each step's
// token gathered on the device; one copy at the end (shared, separate,
// graph) or a copy after every step too (sync_each, the old behaviour).
// graph: the decoder step captured once as a CUDA graph (next_token fed back
// to token inside it) and replayed per step; the encoder runs eagerly.
//
// One mode's handles (and graph), open for the whole case so that the
// modes' repetitions can take turns.
class PipelineMode {
 public:
  static constexpr int kSteps = 128;

  PipelineMode(const Options& opt, const char* mode, const std::vector<float>& frames)
      : mode_(mode),
        separate_(std::strcmp(mode, "separate") == 0),
        sync_each_(std::strcmp(mode, "sync_each") == 0),
        graph_mode_(std::strcmp(mode, "graph") == 0),
        host_tokens_(kSteps) {
    if (separate_) {
      bench::check(aotirt_stream_create(0, &encoder_stream_), "aotirt_stream_create");
      bench::check(aotirt_stream_create(0, &decoder_stream_), "aotirt_stream_create");
    }
    encoder_ = open_with_weights(opt, "encoder", encoder_stream_);
    decoder_ = open_with_weights(opt, "decoder", decoder_stream_);
    stream_ = aotirt_handle_stream(decoder_);
    const int64_t frame_sizes[2] = {64, 80};
    bench::check(aotirt_tensor_upload(frames.data(), 2, frame_sizes, AOTIRT_DTYPE_FLOAT32, 0, aotirt_handle_stream(encoder_), &frames_),
                 "aotirt_tensor_upload");
    if (graph_mode_) capture();
  }

  ~PipelineMode() {
    aotirt_graph_free(graph_);  // before its handle
    aotirt_tensor_free(frames_);
    aotirt_handle_free(encoder_);
    aotirt_handle_free(decoder_);
    aotirt_stream_release(encoder_stream_);
    aotirt_stream_release(decoder_stream_);
  }

  PipelineMode(const PipelineMode&) = delete;
  PipelineMode& operator=(const PipelineMode&) = delete;

  const char* name() const { return mode_; }
  bool separate() const { return separate_; }
  bool sync_each() const { return sync_each_; }
  int64_t first_token() const { return host_tokens_[0]; }
  cudaStream_t cuda_stream() const { return static_cast<cudaStream_t>(aotirt_stream_handle(stream_)); }

  // One whole decode, ending with the copy of the tokens to the host.
  void decode(GpuTimer* timer) {
    aotirt_tensor* hidden = nullptr;
    bench::check(aotirt_handle_run(encoder_, &frames_, 1, &hidden, 1), "encoder run");
    aotirt_tensor* token = start_token();
    aotirt_tensor* tokens = nullptr;
    const int64_t count = kSteps;
    bench::check(aotirt_tensor_empty(1, &count, AOTIRT_DTYPE_INT64, AOTIRT_DEVICE_CUDA, 0, stream_, &tokens), "aotirt_tensor_empty");
    if (timer) timer->begin(cuda_stream());
    double enqueue_start = bench::now_seconds();
    for (int i = 0; i < kSteps; ++i) {
      aotirt_tensor* step_token = nullptr;  // borrowed
      if (graph_mode_) {
        // The first step copies this utterance's hidden and start token
        // in; later steps take the token the graph fed back.
        aotirt_tensor* inputs[2] = {hidden, token};
        bench::check(aotirt_graph_replay(graph_, i == 0 ? inputs : nullptr, i == 0 ? 2 : 0, nullptr),
                     "aotirt_graph_replay");
        step_token = graph_next_token_;
      } else {
        aotirt_tensor* inputs[2] = {hidden, token};
        aotirt_tensor* outputs[2] = {nullptr, nullptr};
        bench::check(aotirt_handle_run(decoder_, inputs, 2, outputs, 2), "decoder run");
        aotirt_tensor_free(outputs[0]);
        aotirt_tensor_free(token);
        token = outputs[1];
        step_token = token;
      }
      aotirt_tensor* slot = nullptr;
      bench::check(aotirt_tensor_narrow(tokens, 0, i, 1, &slot), "aotirt_tensor_narrow");
      bench::check(aotirt_tensor_copy(slot, step_token), "aotirt_tensor_copy");
      aotirt_tensor_free(slot);
      if (sync_each_) {
        int64_t value = 0;
        bench::check(aotirt_copy_to_host(step_token, &value, sizeof value), "aotirt_copy_to_host");
      }
    }
    if (timer) {
      timer->enqueue_seconds = bench::now_seconds() - enqueue_start;
      timer->finish(cuda_stream());
    }
    bench::check(aotirt_copy_to_host(tokens, host_tokens_.data(), kSteps * sizeof(int64_t)), "aotirt_copy_to_host");
    aotirt_tensor_free(tokens);
    aotirt_tensor_free(token);
    aotirt_tensor_free(hidden);
  }

 private:
  aotirt_tensor* start_token() {
    const int64_t one = 1, start = 0;
    aotirt_tensor* token = nullptr;
    bench::check(aotirt_tensor_upload(&start, 1, &one, AOTIRT_DTYPE_INT64, 0, stream_, &token), "aotirt_tensor_upload");
    return token;
  }

  void capture() {
    aotirt_tensor* hidden = nullptr;
    bench::check(aotirt_handle_run(encoder_, &frames_, 1, &hidden, 1), "encoder run");
    aotirt_tensor* token = start_token();
    aotirt_tensor* examples[2] = {hidden, token};
    const size_t feedback[2] = {1, 1};  // next_token (output 1) -> token (input 1)
    bench::check(aotirt_graph_capture_feedback(decoder_, examples, 2, 2, feedback, 1, &graph_),
                 "aotirt_graph_capture_feedback");
    graph_next_token_ = aotirt_graph_output(graph_, 1);  // static: the same every replay
    aotirt_tensor_free(token);
    aotirt_tensor_free(hidden);
  }

  const char* mode_;
  bool separate_, sync_each_, graph_mode_;
  aotirt_stream* encoder_stream_ = nullptr;
  aotirt_stream* decoder_stream_ = nullptr;
  aotirt_handle* encoder_ = nullptr;
  aotirt_handle* decoder_ = nullptr;
  aotirt_stream* stream_ = nullptr;
  aotirt_tensor* frames_ = nullptr;
  aotirt_graph* graph_ = nullptr;
  aotirt_tensor* graph_next_token_ = nullptr;
  std::vector<int64_t> host_tokens_;
};

void pipeline(const Options& opt) {
  std::vector<float> frames(64 * 80);
  for (size_t i = 0; i < frames.size(); ++i) frames[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  std::vector<std::unique_ptr<PipelineMode>> modes;
  for (const char* mode : {"shared", "sync_each", "separate", "graph"})
    modes.push_back(std::make_unique<PipelineMode>(opt, mode, frames));
  for (auto& mode : modes) mode->decode(nullptr);  // warm-up

  // The modes take turns, one decode each per round: the host's speed drifts
  // over seconds on a shared machine, and the ratios between modes must not
  // depend on which mode ran while it was slow.
  std::vector<std::vector<double>> seconds(modes.size());
  for (int rep = 0; rep < bench::repetitions; ++rep) {
    for (size_t m = 0; m < modes.size(); ++m) {
      double begin = bench::now_seconds();
      modes[m]->decode(nullptr);
      seconds[m].push_back(bench::now_seconds() - begin);
    }
  }

  for (size_t m = 0; m < modes.size(); ++m) {
    PipelineMode& mode = *modes[m];
    const int steps = PipelineMode::kSteps;
    double per_decode = bench::median(seconds[m]);
    bench::Record row;
    row.text("case", "pipeline").text("api", "c").text("mode", mode.name()).number("steps", steps)
        .number("tokens_per_s", steps / per_decode).number("us_per_token", per_decode / steps * 1e6)
        .number("first_token", double(mode.first_token()));
    if (!mode.separate() && !mode.sync_each()) {
      // The steps' GPU time alone: with the queue full, the kernels of the
      // shared mode run back to back (the sum of their GPU times, plus the
      // GPU's own gap between kernels), and a graph step is its replay.
      GpuTimer timer;
      timer.hold_ns = static_cast<unsigned long long>(per_decode * 4e9) + 1000000ull;
      double gpu_seconds = bench::median_of([&] {
        mode.decode(&timer);
        return timer.elapsed_seconds();
      });
      row.number("gpu_us_per_step", gpu_seconds / steps * 1e6).number("queue_full", timer.queue_was_full() ? 1 : 0);
    }
    row.emit();
  }
}

}  // namespace

int usage() {
  std::fprintf(stderr,
               "usage: aotirt_bench --models DIR [--device cpu|cuda] [--quick] [--cases dispatch,pipeline,copy] "
               "[--reps N]\n");
  return 2;
}

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--models" && has_value) {
      opt.models = argv[++i];
    } else if (arg == "--device" && has_value) {
      std::string device = argv[++i];
      if (device != "cpu" && device != "cuda") return usage();
      opt.cpu = device == "cpu";
      opt.cuda = device == "cuda";
    } else if (arg == "--quick") {
      opt.quick = true;
    } else if (arg == "--cases" && has_value) {
      opt.cases = argv[++i];
    } else if (arg == "--reps" && has_value) {
      bench::repetitions = std::atoi(argv[++i]);
      if (bench::repetitions < 1) return usage();
    } else {
      return usage();
    }
  }
  if (opt.models.empty()) {
    std::fprintf(stderr, "aotirt_bench: --models DIR (the package's models folder) is required\n");
    return 2;
  }
  if (opt.cpu && opt.runs("dispatch")) dispatch(opt, AOTIRT_DEVICE_CPU);
  if (!opt.cuda) return 0;
  if (aotirt_device_count() == 0) {
    std::fprintf(stderr, "aotirt_bench: no CUDA GPU: the CUDA cases did not run\n");
    return 0;
  }
  if (opt.runs("dispatch")) dispatch(opt, AOTIRT_DEVICE_CUDA);
  if (opt.runs("pipeline")) pipeline(opt);
  if (opt.runs("copy")) copy();
  return 0;
}
