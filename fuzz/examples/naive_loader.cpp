// naive_loader.cpp: a small safetensors header reader in C++, to be fuzzed.
//
// It reads the 8-byte little-endian length N, reads the header into a
// std::string, and parses the top-level object with a hand-written
// recursive reader: for each tensor it takes "dtype", "shape" and
// "data_offsets" and checks that the offsets lie inside the data region.
// Errors are exceptions (std::runtime_error, and whatever std::stoull
// throws); the C entry point turns every std::exception into a rejection.
// Like the C example it trusts too much (no layout, dtype or size checks);
// it is here to show the C++ build of fuzz/harness/loader_harness.c
// (fuzz/README.md, "C++ loaders"), not to load files.
//
// Standalone: `naive_loader_cpp FILE` follows the exit protocol of
// validator/harness/rejection.py (0 accepts, 1 rejects, a signal is a crash).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Tensor {
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::vector<std::uint64_t> offsets;
};

class Reader {
  public:
    explicit Reader(const std::string &text) : text_(text) {}

    std::map<std::string, Tensor> header() {
        std::map<std::string, Tensor> tensors;
        expect('{');
        while (peek() != '}') {
            std::string name = string();
            expect(':');
            if (name == "__metadata__") {
                skip();
            } else {
                tensors[name] = tensor();
            }
            if (peek() == ',') ++pos_;
        }
        ++pos_;
        return tensors;
    }

  private:
    const std::string &text_;
    std::size_t pos_ = 0;

    char peek() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
        if (pos_ >= text_.size()) throw std::runtime_error("unexpected end of the header");
        return text_[pos_];
    }

    void expect(char c) {
        if (peek() != c) throw std::runtime_error(std::string("expected '") + c + "'");
        ++pos_;
    }

    std::string string() {
        expect('"');
        std::size_t end = text_.find('"', pos_);
        if (end == std::string::npos) throw std::runtime_error("unterminated string");
        std::string out = text_.substr(pos_, end - pos_);
        pos_ = end + 1;
        return out;
    }

    std::vector<std::uint64_t> numbers() {
        std::vector<std::uint64_t> out;
        expect('[');
        while (peek() != ']') {
            std::size_t used = 0;
            out.push_back(std::stoull(text_.substr(pos_, 24), &used));
            pos_ += used;
            if (peek() == ',') ++pos_;
        }
        ++pos_;
        return out;
    }

    void skip() {  // any value, recursively
        char c = peek();
        if (c == '"') {
            string();
        } else if (c == '{' || c == '[') {
            char close = c == '{' ? '}' : ']';
            ++pos_;
            while (peek() != close) {
                skip();
                if (peek() == ':' || peek() == ',') ++pos_;
            }
            ++pos_;
        } else {
            while (pos_ < text_.size() && std::string(",:]}").find(text_[pos_]) == std::string::npos) ++pos_;
        }
    }

    Tensor tensor() {
        Tensor t;
        expect('{');
        while (peek() != '}') {
            std::string key = string();
            expect(':');
            if (key == "dtype") {
                t.dtype = string();
            } else if (key == "shape") {
                t.shape = numbers();
            } else if (key == "data_offsets") {
                t.offsets = numbers();
            } else {
                skip();
            }
            if (peek() == ',') ++pos_;
        }
        ++pos_;
        return t;
    }
};

void load(const char *path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open the file");
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.size() < 8) throw std::runtime_error("shorter than 8 bytes");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(data[i]);
    if (n > data.size() - 8) throw std::runtime_error("header length exceeds the file");
    std::string text = data.substr(8, n);
    std::uint64_t room = data.size() - 8 - n;
    for (const auto &entry : Reader(text).header()) {
        const Tensor &t = entry.second;
        if (t.offsets.size() != 2) throw std::runtime_error("data_offsets needs two numbers");
        if (t.offsets[1] > room) throw std::runtime_error("tensor '" + entry.first + "' ends past the file");
    }
}

}  // namespace

// The loader function of fuzz/harness/loader_harness.c, with C linkage so
// that a harness built as C (or linked from another object) can call it.
extern "C" int naive_cpp_load(const char *path, const char **reason) {
    static std::string why;  // outlives the call: *reason points into it
    try {
        load(path);
        return 0;
    } catch (const std::exception &e) {
        why = e.what();
        *reason = why.c_str();
        return 1;
    }
}

#ifndef STCHECK_HARNESS
int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const char *reason = "";
    if (naive_cpp_load(argv[1], &reason) == 0) return 0;
    std::fprintf(stderr, "rejected: %s\n", reason);
    return 1;
}
#endif
