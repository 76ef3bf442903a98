// aotirt's C benchmark harness: drives the same core functions as Python
// (libaotirt.so), so each figure here is the floor of the same operation
// from Python. Prints one JSON object per line (see bench_support.hpp).
//
//   aotirt_bench --models DIR [--device cpu|cuda] [--quick]
//
// The harness waits for the GPU only through aotirt_copy_to_host, like
// everything else in aotirt.

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <vector>

#include "../cuda_src/models/add_mul.h"
#include "bench_support.hpp"

namespace {

struct Options {
  std::string models;
  bool cpu_only = false;
  bool quick = false;
};

std::string device_name(int32_t type) { return type == AOTIRT_DEVICE_CPU ? "cpu" : "cuda:0"; }

aotirt_tensor* upload_ones(int64_t n, int32_t device_type) {
  std::vector<float> ones(n, 1.0f);
  aotirt_tensor* t = nullptr;
  if (device_type == AOTIRT_DEVICE_CPU) {
    bench::check(aotirt_tensor_empty(1, &n, 6, AOTIRT_DEVICE_CPU, 0, nullptr, &t), "aotirt_tensor_empty");
    std::memcpy(aotirt_tensor_data(t), ones.data(), n * sizeof(float));
  } else {
    bench::check(aotirt_tensor_upload(ones.data(), 1, &n, 6, 0, nullptr, &t), "aotirt_tensor_upload");
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
void copy(const Options& opt) {
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
    cudaFreeHost(pinned);
    aotirt_tensor_free(t);
    (void)opt;
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
  bench::check(aotirt_handle_update_constants_from_blob(handle, reinterpret_cast<const uint8_t*>(blob.data())),
               "aotirt_handle_update_constants_from_blob");
  return handle;
}

// Case 2: the encoder once, then `steps` greedy decoder steps, each step's
// token gathered on the device; one copy at the end (shared, separate) or a
// copy after every step too (sync_each, the old behaviour).
void pipeline(const Options& opt) {
  const int steps = 128;
  const int64_t frame_sizes[2] = {64, 80};
  std::vector<float> frames(64 * 80);
  for (size_t i = 0; i < frames.size(); ++i) frames[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;

  for (const char* mode : {"shared", "sync_each", "separate"}) {
    const bool separate = std::strcmp(mode, "separate") == 0;
    const bool sync_each = std::strcmp(mode, "sync_each") == 0;
    aotirt_stream *encoder_stream = nullptr, *decoder_stream = nullptr;
    if (separate) {
      bench::check(aotirt_stream_create(0, &encoder_stream), "aotirt_stream_create");
      bench::check(aotirt_stream_create(0, &decoder_stream), "aotirt_stream_create");
    }
    aotirt_handle* encoder = open_with_weights(opt, "encoder", encoder_stream);
    aotirt_handle* decoder = open_with_weights(opt, "decoder", decoder_stream);
    aotirt_stream* stream = aotirt_handle_stream(decoder);
    aotirt_tensor* frame_tensor = nullptr;
    bench::check(aotirt_tensor_upload(frames.data(), 2, frame_sizes, 6, 0, aotirt_handle_stream(encoder), &frame_tensor),
                 "aotirt_tensor_upload");
    std::vector<int64_t> host_tokens(steps);

    auto decode = [&] {
      aotirt_tensor* hidden = nullptr;
      bench::check(aotirt_handle_run(encoder, &frame_tensor, 1, &hidden, 1), "encoder run");
      const int64_t one = 1, start = 0, count = steps;
      aotirt_tensor* token = nullptr;
      bench::check(aotirt_tensor_upload(&start, 1, &one, 4, 0, stream, &token), "aotirt_tensor_upload");
      aotirt_tensor* tokens = nullptr;
      bench::check(aotirt_tensor_empty(1, &count, 4, AOTIRT_DEVICE_CUDA, 0, stream, &tokens), "aotirt_tensor_empty");
      for (int i = 0; i < steps; ++i) {
        aotirt_tensor* inputs[2] = {hidden, token};
        aotirt_tensor* outputs[2] = {nullptr, nullptr};
        bench::check(aotirt_handle_run(decoder, inputs, 2, outputs, 2), "decoder run");
        aotirt_tensor_free(outputs[0]);
        aotirt_tensor_free(token);
        token = outputs[1];
        aotirt_tensor* slot = nullptr;
        bench::check(aotirt_tensor_narrow(tokens, 0, i, 1, &slot), "aotirt_tensor_narrow");
        bench::check(aotirt_tensor_copy(slot, token), "aotirt_tensor_copy");
        aotirt_tensor_free(slot);
        if (sync_each) {
          int64_t value = 0;
          bench::check(aotirt_copy_to_host(token, &value, sizeof value), "aotirt_copy_to_host");
        }
      }
      bench::check(aotirt_copy_to_host(tokens, host_tokens.data(), steps * sizeof(int64_t)), "aotirt_copy_to_host");
      aotirt_tensor_free(tokens);
      aotirt_tensor_free(token);
      aotirt_tensor_free(hidden);
    };

    decode();  // warm-up
    double seconds = bench::median_of([&] {
      double start = bench::now_seconds();
      decode();
      return bench::now_seconds() - start;
    });
    bench::Record().text("case", "pipeline").text("api", "c").text("mode", mode).number("steps", steps)
        .number("tokens_per_s", steps / seconds).number("us_per_token", seconds / steps * 1e6)
        .number("first_token", double(host_tokens[0])).emit();
    aotirt_tensor_free(frame_tensor);
    aotirt_handle_free(encoder);
    aotirt_handle_free(decoder);
    aotirt_stream_release(encoder_stream);
    aotirt_stream_release(decoder_stream);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--models" && i + 1 < argc) opt.models = argv[++i];
    else if (arg == "--device" && i + 1 < argc) opt.cpu_only = std::string(argv[++i]) == "cpu";
    else if (arg == "--quick") opt.quick = true;
    else {
      std::fprintf(stderr, "usage: aotirt_bench --models DIR [--device cpu|cuda] [--quick]\n");
      return 2;
    }
  }
  if (opt.models.empty()) {
    std::fprintf(stderr, "aotirt_bench: --models DIR (the package's models folder) is required\n");
    return 2;
  }
  dispatch(opt, AOTIRT_DEVICE_CPU);
  if (opt.cpu_only) return 0;
  if (aotirt_device_count() == 0) {
    std::fprintf(stderr, "aotirt_bench: no CUDA GPU: only the CPU cases ran\n");
    return 0;
  }
  dispatch(opt, AOTIRT_DEVICE_CUDA);
  pipeline(opt);
  copy(opt);
  return 0;
}
