// The one pybind11 file: checks dtypes, shapes and contiguity, takes pointers, releases the GIL,
// makes one core call and copies the result into numpy arrays. No logic lives here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <optional>

#include "polarmem/call_weight.hpp"
#include "polarmem/diagnostics.hpp"
#include "polarmem/error.hpp"
#include "polarmem/index.hpp"
#include "polarmem/item_ids.hpp"
#include "polarmem/item_records.hpp"
#include "polarmem/metadata_postings.hpp"
#include "polarmem/namespace_items.hpp"
#include "polarmem/rpc_latency.hpp"
#include "polarmem/shared_text_runs.hpp"
#include "polarmem/simd.hpp"
#include "polarmem/text_encoder.hpp"
#include "polarmem/write_lock.hpp"

namespace py = pybind11;
using namespace polarmem;

namespace {

template <typename T>
const char* dtype_name();
template <>
const char* dtype_name<float>() {
  return "float32";
}
template <>
const char* dtype_name<std::int64_t>() {
  return "int64";
}
template <>
const char* dtype_name<std::uint32_t>() {
  return "uint32";
}
template <>
const char* dtype_name<std::uint8_t>() {
  return "uint8";
}
template <>
const char* dtype_name<std::int8_t>() {
  return "int8";
}
template <>
const char* dtype_name<std::int32_t>() {
  return "int32";
}

// The data pointer of a C-contiguous array of exactly dtype T and `ndim` dimensions.
template <typename T>
const T* checked(const py::array& a, const char* name, py::ssize_t ndim) {
  if (!a.dtype().is(py::dtype::of<T>())) {
    throw py::type_error(std::string(name) + " must have dtype " + dtype_name<T>() + ", got " +
                         std::string(py::str(a.dtype())) + "; convert with np.ascontiguousarray(x, dtype=np." +
                         dtype_name<T>() + ")");
  }
  if (a.ndim() != ndim) {
    throw py::value_error(std::string(name) + " must be " + std::to_string(ndim) + "-dimensional, got " +
                          std::to_string(a.ndim()) + " dimensions");
  }
  if (!(a.flags() & py::array::c_style)) {
    throw py::value_error(std::string(name) + " must be C-contiguous; try np.ascontiguousarray(x)");
  }
  return static_cast<const T*>(a.data());
}

template <typename T>
py::array_t<T> to_numpy(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(T));
  return out;
}

ConceptLists lists(const std::optional<py::array>& indptr, const std::optional<py::array>& ids, std::size_t count,
                   const char* name) {
  if (!indptr) return {};
  const auto* p = checked<std::int64_t>(*indptr, name, 1);
  if (static_cast<std::size_t>(indptr->size()) != count + 1) {
    throw py::value_error(std::string(name) + " indptr must have " + std::to_string(count + 1) + " entries");
  }
  if (!ids) throw py::value_error(std::string(name) + " ids are missing");
  const auto* i = checked<std::uint32_t>(*ids, name, 1);
  if (p[count] != static_cast<std::int64_t>(ids->size()))
    throw py::value_error(std::string(name) + " indptr[-1] must equal len(ids)");
  return {p, i};
}

// Confidence grades as CSR: (indptr[count + 1] int64, ids uint32, grades int8, confidence uint8 |
// None) or None.
using PyGrades = std::optional<std::tuple<py::array, py::array, py::array, std::optional<py::array>>>;
ConceptGrades grade_lists(const PyGrades& grades, std::size_t count) {
  if (!grades) return {};
  const auto& [indptr, ids, values, confidence] = *grades;
  const ConceptLists base = lists(indptr, ids, count, "grades");
  const auto* g = checked<std::int8_t>(values, "grades", 1);
  if (values.size() != ids.size()) throw py::value_error("grades: one grade per id expected");
  const std::uint8_t* c = nullptr;
  if (confidence) {
    c = checked<std::uint8_t>(*confidence, "confidence", 1);
    if (confidence->size() != ids.size()) throw py::value_error("grades: one confidence byte per id expected");
  }
  return {base.indptr, base.ids, g, c};
}

// (space, values[rows, dim], present[rows] | None, counts[items] | None)
using PyVectors = std::tuple<std::string, py::array, std::optional<py::array>, std::optional<py::array>>;

VectorInput vector_input(const PyVectors& v) {
  const auto& [space, values, present, counts] = v;
  VectorInput in;
  in.space = space;
  in.values = checked<float>(values, "vectors", 2);
  in.rows = static_cast<std::size_t>(values.shape(0));
  in.dim = static_cast<std::size_t>(values.shape(1));
  if (present) in.present = checked<std::uint8_t>(*present, "present", 1);
  if (counts) in.counts = checked<std::int64_t>(*counts, "counts", 1);
  return in;
}

// Drops tombstones (the GIL released meanwhile); new_of_old as an int64 array.
template <typename Compactable>
py::array_t<std::int64_t> compacted(Compactable& self) {
  std::vector<std::int64_t> mapping;
  {
    py::gil_scoped_release release;
    mapping = self.compact();
  }
  return to_numpy(mapping);
}

// Copies a 1-D float32 array into a query vector (a request owns its data).
QueryVector query_vector(const std::string& space, const py::array& values, float weight) {
  const float* v = checked<float>(values, "query", 1);
  return QueryVector{space, std::vector<float>(v, v + values.size()), weight};
}

// (space, values[dim], weight) per query vector.
using PyQueryVectors = std::vector<std::tuple<std::string, py::array, float>>;

void set_vectors(SearchRequest& r, const PyQueryVectors& vectors) {
  r.vectors.clear();
  for (const auto& [space, values, weight] : vectors) r.vectors.push_back(query_vector(space, values, weight));
}

void set_allow(SearchRequest& r, const std::optional<py::array>& allow) {
  if (!allow) {
    r.allow.reset();
    return;
  }
  const auto* a = checked<std::int64_t>(*allow, "allow", 1);
  r.allow = std::make_shared<const std::vector<std::int64_t>>(a, a + allow->size());
}

py::tuple result_tuple(const SearchResult& r) {
  return py::make_tuple(to_numpy(r.slots), to_numpy(r.tiers), to_numpy(r.scores),
                        py::make_tuple(r.tier_counts[0], r.tier_counts[1], r.tier_counts[2]), r.scored, r.reranked,
                        r.approximate, to_numpy(r.confidence), to_numpy(r.rank_scores));
}

// (space, m, ef_construction, ef_search, exact_below, exact_factor)
using PyAnn = std::tuple<std::string, std::size_t, std::size_t, std::size_t, std::size_t, double>;

Storage parse_storage(const std::string& name) {
  if (name == "fp32") return Storage::kF32;
  if (name == "fp16") return Storage::kF16;
  if (name == "int8") return Storage::kI8;
  throw py::value_error("storage must be 'fp32', 'fp16' or 'int8', got '" + name + "'");
}

// A compaction's new_of_old (int64 array) for a table kept by slot beside the index.
template <typename BySlot>
void renumber(BySlot& self, const py::array& new_of_old) {
  const auto* n = checked<std::int64_t>(new_of_old, "new_of_old", 1);
  const std::vector<std::int64_t> moved(n, n + new_of_old.size());
  py::gil_scoped_release release;
  self.renumber(moved);
}

}  // namespace

namespace polarmem::bindings {
void bind_text(py::module_& m);  // text_module.cpp
void bind_wordpiece(py::module_& m);  // wordpiece_module.cpp
void bind_checks(py::module_& m);     // checks_module.cpp
void bind_kv(py::module_& m);         // kv_module.cpp
}  // namespace polarmem::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "PolarMem compiled retrieval core (private; use polarmem_server.index)";

  // The core's error codes as subclasses of the domain hierarchy (polarmem_server.errors), so
  // the API layer maps them by class; each also keeps the builtin base it had before.
  // Anything else a core call throws stays a RuntimeError: a bug, answered INTERNAL.
  const py::module_ errors = py::module_::import("polarmem_server.errors");
  const py::module_ builtins = py::module_::import("builtins");
  auto error_class = [&](const char* name, py::tuple bases, const char* doc) {
    const std::string qualified = std::string("polarmem_server._core.") + name;
    py::object cls =
        py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr));
    if (!cls) throw py::error_already_set();
    m.attr(name) = cls;
    return cls.release().ptr();  // the module keeps a reference for the process's lifetime
  };
  static PyObject* invalid_argument =
      error_class("InvalidArgumentError", py::make_tuple(errors.attr("InvalidArgument")),  // a ValueError already
                  "The core rejected a malformed input (shape, NaN, unknown space, k out of range).");
  static PyObject* out_of_range =
      error_class("OutOfRangeError", py::make_tuple(errors.attr("InvalidArgument"), builtins.attr("IndexError")),
                  "A concept id or slot outside what the index holds.");
  static PyObject* failed_precondition = error_class(
      "FailedPreconditionError", py::make_tuple(errors.attr("FailedPrecondition"), builtins.attr("LookupError")),
      "Valid input the index's current state cannot accept (a removed slot).");
  static PyObject* resource_exhausted = error_class(
      "ResourceExhaustedError", py::make_tuple(errors.attr("ResourceExhausted"), builtins.attr("MemoryError")),
      "The core could not allocate the memory a call needed.");
  static PyObject* disk_full =
      error_class("DiskFullError", py::make_tuple(errors.attr("ResourceExhausted"), builtins.attr("OSError")),
                  "The store's disk is full: nothing was written; writes resume once space is freed.");
  static PyObject* unavailable =
      error_class("UnavailableError", py::make_tuple(errors.attr("Unavailable"), builtins.attr("OSError")),
                  "The store cannot write now (an I/O error, a reopen after one, a shutdown); retry.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      switch (e.code()) {
        case ErrorCode::kInvalidArgument: PyErr_SetString(invalid_argument, e.what()); return;
        case ErrorCode::kOutOfRange: PyErr_SetString(out_of_range, e.what()); return;
        case ErrorCode::kFailedPrecondition: PyErr_SetString(failed_precondition, e.what()); return;
        case ErrorCode::kResourceExhausted: PyErr_SetString(disk_full, e.what()); return;
        case ErrorCode::kUnavailable: PyErr_SetString(unavailable, e.what()); return;
      }
      PyErr_SetString(PyExc_RuntimeError, e.what());  // an unknown code is a core bug
    } catch (const std::bad_alloc&) {
      PyErr_SetString(resource_exhausted,
                      "the index could not allocate memory for this call; lower k, the batch size or the allow-list");
    }
  });

  m.attr("MAX_TOP_K") = kMaxTopK;
  m.attr("RPC_LATENCY_BOUNDS") = std::vector<double>(kRpcLatencyBounds.begin(), kRpcLatencyBounds.end());
  m.attr("MAX_DIM") = kMaxDim;
  m.attr("CONFIDENCE_LEVELS") = kConfidenceLevels;
  m.attr("CONFIDENCE_SCALE") = kConfidenceScale;
  m.attr("NOT_SCORED") = kNotScored;

  py::enum_<SearchMode>(m, "SearchMode",
                        "How hits are ranked: off (s_sem), hard ((s_log, s_sem)), soft (s_sem + lambda s_log), "
                        "strict ((s_log, absence verified, s_sem)).")
      .value("off", SearchMode::kOff)
      .value("hard", SearchMode::kHard)
      .value("soft", SearchMode::kSoft)
      .value("strict", SearchMode::kStrict);

  py::class_<SearchRequest>(m, "SearchRequest",
                            "One query: vectors, concept constraints and filters. A batch is a list of these.")
      .def(py::init([](const PyQueryVectors& vectors, std::vector<std::uint32_t> required,
                       std::vector<std::uint32_t> forbidden, std::size_t k, SearchMode mode, float soft_lambda,
                       bool exclude_conflicts, std::uint8_t kind_mask, const std::optional<py::array>& allow,
                       std::size_t threads, bool exact, std::size_t ef_search, std::uint8_t present_level,
                       std::uint8_t absent_level, float present_weight, float absent_weight) {
             SearchRequest r;
             set_vectors(r, vectors);
             r.required = std::move(required);
             r.forbidden = std::move(forbidden);
             r.k = k;
             r.mode = mode;
             r.soft_lambda = soft_lambda;
             r.exclude_conflicts = exclude_conflicts;
             r.kind_mask = kind_mask;
             set_allow(r, allow);
             r.threads = threads;
             r.exact = exact;
             r.ef_search = ef_search;
             r.present_level = present_level;
             r.absent_level = absent_level;
             r.present_weight = present_weight;
             r.absent_weight = absent_weight;
             return r;
           }),
           py::arg("vectors") = PyQueryVectors{}, py::arg("required") = std::vector<std::uint32_t>{},
           py::arg("forbidden") = std::vector<std::uint32_t>{}, py::arg("k") = 10, py::arg("mode") = SearchMode::kHard,
           py::arg("soft_lambda") = 1.0f, py::arg("exclude_conflicts") = false, py::arg("kind_mask") = 0,
           py::arg("allow") = py::none(), py::arg("threads") = 0, py::arg("exact") = true, py::arg("ef_search") = 0,
           py::arg("present_level") = 0, py::arg("absent_level") = 0, py::arg("present_weight") = 0.0f,
           py::arg("absent_weight") = 0.0f)
      .def_property(
          "vectors",
          [](const SearchRequest& r) {
            py::list out;
            for (const auto& v : r.vectors) out.append(py::make_tuple(v.space, to_numpy(v.values), v.weight));
            return out;
          },
          &set_vectors, "[(space, float32 vector, weight)]; assigning copies the arrays")
      .def_readwrite("required", &SearchRequest::required)
      .def_readwrite("forbidden", &SearchRequest::forbidden)
      .def_readwrite("k", &SearchRequest::k)
      .def_readwrite("mode", &SearchRequest::mode)
      .def_readwrite("soft_lambda", &SearchRequest::soft_lambda)
      .def_readwrite("exclude_conflicts", &SearchRequest::exclude_conflicts)
      .def_readwrite("kind_mask", &SearchRequest::kind_mask)
      .def_property(
          "allow",
          [](const SearchRequest& r) -> py::object {
            if (!r.allow) return py::none();
            return to_numpy(*r.allow);
          },
          &set_allow, "int64 slots or None")
      .def_readwrite("threads", &SearchRequest::threads)
      .def_readwrite("exact", &SearchRequest::exact)
      .def_readwrite("ef_search", &SearchRequest::ef_search)
      .def_readwrite("present_level", &SearchRequest::present_level)
      .def_readwrite("absent_level", &SearchRequest::absent_level)
      .def_readwrite("present_weight", &SearchRequest::present_weight)
      .def_readwrite("absent_weight", &SearchRequest::absent_weight)
      .def("__copy__", [](const SearchRequest& r) { return SearchRequest(r); })  // shares the allow-list
      .def(
          "__deepcopy__", [](const SearchRequest& r, py::dict) { return SearchRequest(r); }, py::arg("memo"))
      .def("__repr__", [](const SearchRequest& r) {
        std::string spaces;
        for (const auto& v : r.vectors) spaces += (spaces.empty() ? "" : ", ") + v.space;
        return "SearchRequest(spaces=[" + spaces + "], required=" + std::to_string(r.required.size()) +
               " ids, forbidden=" + std::to_string(r.forbidden.size()) + " ids, k=" + std::to_string(r.k) + ")";
      });

  m.def("build_info", [] {
    py::dict info;
    info["version"] = POLARMEM_VERSION;
    info["compiler"] = POLARMEM_COMPILER;
    py::list compiled, supported;
    for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
      compiled.append(simd_level_name(level));
      if (cpu_supports(level)) supported.append(simd_level_name(level));
    }
    info["simd_compiled"] = compiled;
    info["simd_supported"] = supported;
    info["simd_active"] = simd_level_name(active_simd_level());
    return info;
  });
  m.def("simd_level", [] { return std::string(simd_level_name(active_simd_level())); });
  m.def("set_simd_level", [](const std::string& name) {
    SimdLevel level;
    if (!parse_simd_level(name.c_str(), &level)) throw py::value_error("SIMD level must be scalar, avx2 or avx512");
    set_simd_level(level);
  });

  m.def("measure_read_bandwidth", &measure_read_bandwidth, py::arg("bytes"), py::arg("threads"), py::arg("repeats"),
        py::call_guard<py::gil_scoped_release>(), "Best read bandwidth in bytes/s over `repeats` streams of `bytes`.");

  py::class_<ItemIds, std::shared_ptr<ItemIds>>(m, "ItemIds", "Item ids by index slot (\"\" = no live item).")
      .def(py::init<>())
      .def("append", &ItemIds::append, py::arg("ids"))
      .def("truncate", &ItemIds::truncate, py::arg("size"))
      .def("clear", &ItemIds::clear, py::arg("slot"))
      .def("begin_renumbering", &ItemIds::begin_renumbering)
      .def("replace_all", &ItemIds::replace_all, py::arg("ids"))
      .def("end_renumbering", &ItemIds::end_renumbering)
      .def("get", &ItemIds::get, py::arg("slot"))
      .def(
          "resolve",
          [](const ItemIds& self, const py::array& slots) {
            const auto* s = checked<std::int64_t>(slots, "slots", 1);
            std::vector<std::string> ids;
            self.resolve(s, static_cast<std::size_t>(slots.size()), &ids);
            return ids;
          },
          py::arg("slots"))
      .def("all", &ItemIds::all)
      .def_property_readonly("size", &ItemIds::size)
      .def_property_readonly("generation", &ItemIds::generation);

  py::class_<ItemRecords, std::shared_ptr<ItemRecords>>(
      m, "ItemRecords", "Serialised item records by slot, for the compiled front's explained answers.")
      .def(py::init<>())
      .def(
          "set",
          [](ItemRecords& self, std::int64_t slot, const py::bytes& record) { self.set(slot, std::string(record)); },
          py::arg("slot"), py::arg("record"))
      .def(
          "fill",
          [](ItemRecords& self, std::int64_t slot, const py::bytes& record) { self.fill(slot, std::string(record)); },
          py::arg("slot"), py::arg("record"))
      .def("clear", &ItemRecords::clear, py::arg("slot"))
      .def("renumber", &renumber<ItemRecords>, py::arg("new_of_old"))
      .def(
          "get",
          [](const ItemRecords& self, std::int64_t slot) -> std::optional<py::bytes> {
            std::vector<std::string> out;
            if (!self.get(&slot, 1, &out)) return std::nullopt;
            return py::bytes(out[0]);
          },
          py::arg("slot"))
      .def_property_readonly("count", &ItemRecords::count)
      .def_property_readonly("bytes", &ItemRecords::bytes);

  py::class_<MetadataPostings, std::shared_ptr<MetadataPostings>>(
      m, "MetadataPostings", "Slots by metadata (key, value) pair: the allow-lists of metadata_equals filters.")
      .def(py::init<>())
      .def("add", &MetadataPostings::add, py::arg("slot"), py::arg("pairs"))
      .def("remove", &MetadataPostings::remove, py::arg("slot"), py::arg("pairs"))
      .def("renumber", &renumber<MetadataPostings>, py::arg("new_of_old"))
      .def(
          "matching",
          [](const MetadataPostings& self, const std::vector<MetadataPair>& pairs) {
            std::vector<std::int64_t> slots;
            {
              py::gil_scoped_release release;
              slots = self.matching(pairs);
            }
            return to_numpy(slots);
          },
          py::arg("pairs"), "slots holding every pair, ascending (int64 array)");

  py::class_<WriteLock, std::shared_ptr<WriteLock>>(m, "WriteLock",
                                                    "A namespace's write lock, for every door (write_lock.hpp).")
      .def(py::init<>())
      .def(
          "acquire",
          [](WriteLock& self, bool blocking, double timeout) {
            if (self.try_lock()) return true;
            if (!blocking) return false;
            py::gil_scoped_release release;  // a holder may need the interpreter to finish
            if (timeout < 0) {
              self.lock();
              return true;
            }
            return self.try_lock_for(timeout);
          },
          py::arg("blocking") = true, py::arg("timeout") = -1.0,
          "as threading.RLock.acquire: True once held (reentrant), False when not within timeout")
      .def("release", &WriteLock::unlock, "by the thread that holds it");

  py::class_<NamespaceItems, std::shared_ptr<NamespaceItems>>(
      m, "NamespaceItems", "One namespace's items in memory: index, ids, metadata, records, slots and counts in step.")
      .def(py::init<std::string, std::shared_ptr<Index>, std::shared_ptr<ItemIds>, std::shared_ptr<MetadataPostings>>(),
           py::arg("name"), py::arg("index"), py::arg("ids"), py::arg("metadata"))
      .def_readwrite("compact_min_tombstones", &NamespaceItems::compact_min_tombstones,
                     "remove() compacts once tombstones are a quarter of the slots and at least this many")
      .def("keep_records", &NamespaceItems::keep_records)
      .def_property_readonly("records", &NamespaceItems::records)
      .def("slot", &NamespaceItems::slot, py::arg("id"))
      .def("slots",
           [](const NamespaceItems& self) {
             py::dict out;
             for (const auto& [id, slot] : self.slots()) out[py::str(id)] = slot;
             return out;
           })
      .def(
          "counts",
          [](const NamespaceItems& self) {
            const NamespaceItems::Counts c = self.counts();
            return py::make_tuple(c.kinds, c.has, c.not_has, c.align, c.scored);
          },
          "(kinds, has, not_has, align, scored): live items by kind and by concept per polarity")
      .def(
          "add",
          // Records cross as owned copies: the GIL is released while the core reads them.
          [](NamespaceItems& self, const std::vector<std::string>& ids, const std::vector<std::string>& index_records,
             const std::vector<PyVectors>& vectors, const PyGrades& grades, const std::vector<std::string>& records) {
            std::vector<VectorInput> inputs;
            for (const auto& v : vectors) inputs.push_back(vector_input(v));
            const ConceptGrades graded = grade_lists(grades, ids.size());
            const std::vector<std::string_view> index_views(index_records.begin(), index_records.end());
            const std::vector<std::string_view> record_views(records.begin(), records.end());
            py::gil_scoped_release release;
            self.add(ids, index_views, inputs, graded, record_views);
          },
          py::arg("ids"), py::arg("index_records"), py::arg("vectors"), py::arg("grades"), py::arg("records"))
      .def(
          "replace",
          [](NamespaceItems& self, const std::string& previous, const std::string& record,
             const std::vector<PyVectors>& vectors, const PyGrades& grades) {
            std::vector<VectorInput> inputs;
            for (const auto& v : vectors) inputs.push_back(vector_input(v));
            const ConceptGrades graded = grade_lists(grades, 1);
            py::gil_scoped_release release;
            self.replace(previous, record, inputs, graded);
          },
          py::arg("previous"), py::arg("record"), py::arg("vectors"), py::arg("grades"))
      .def(
          "remove", [](NamespaceItems& self, const std::string& record) { return self.remove(record); },
          py::arg("record"), py::call_guard<py::gil_scoped_release>())
      .def("compact", &compacted<NamespaceItems>)
      .def(
          "fill_records",
          [](NamespaceItems& self, const std::vector<std::string>& ids,
             const std::vector<std::optional<py::bytes>>& records) {
            std::vector<std::optional<std::string>> held;
            for (const auto& r : records)
              held.push_back(r ? std::optional<std::string>(std::string(*r)) : std::nullopt);
            self.fill_records(ids, held);
          },
          py::arg("ids"), py::arg("records"));

  // Shared holders: the compiled Recall front (polarmem_server._front) keeps a namespace's index
  // and ids alive while a call it serves is using them.
  py::class_<Index, std::shared_ptr<Index>>(m, "Index")
      .def(py::init([](const std::vector<std::tuple<std::string, std::size_t, bool, std::string>>& spaces,
                       std::size_t threads, const std::vector<PyAnn>& ann) {
             std::vector<SpaceConfig> configs;
             for (const auto& [name, dim, multi, storage] : spaces)
               configs.push_back({name, dim, multi, parse_storage(storage)});
             for (const auto& [space, m, ef_construction, ef_search, exact_below, exact_factor] : ann) {
               auto it =
                   std::find_if(configs.begin(), configs.end(), [&](const SpaceConfig& c) { return c.name == space; });
               if (it == configs.end()) throw py::value_error("ann: unknown vector space '" + space + "'");
               it->ann = AnnConfig{true, m, ef_construction, ef_search, exact_below, exact_factor};
             }
             return std::make_shared<Index>(std::move(configs), threads);
           }),
           py::arg("spaces"), py::arg("threads") = 0, py::arg("ann") = std::vector<PyAnn>{},
           "ann: [(space, m, ef_construction, ef_search, exact_below, exact_factor)], one per space given an "
           "approximate index")
      .def(
          "add",
          [](Index& self, const py::array& kinds, const std::vector<PyVectors>& vectors,
             const std::optional<py::array>& has_indptr, const std::optional<py::array>& has_ids,
             const std::optional<py::array>& not_indptr, const std::optional<py::array>& not_ids,
             const PyGrades& grades) {
            ItemBatch batch;
            batch.kinds = checked<std::uint8_t>(kinds, "kinds", 1);
            batch.count = static_cast<std::size_t>(kinds.size());
            for (const auto& v : vectors) batch.vectors.push_back(vector_input(v));
            batch.has = lists(has_indptr, has_ids, batch.count, "has");
            batch.not_has = lists(not_indptr, not_ids, batch.count, "not_has");
            batch.grades = grade_lists(grades, batch.count);
            py::gil_scoped_release release;
            return self.add(batch);
          },
          py::arg("kinds"), py::arg("vectors"), py::arg("has_indptr"), py::arg("has_ids"), py::arg("not_indptr"),
          py::arg("not_ids"), py::arg("grades") = py::none())
      .def(
          "set_concepts",
          [](Index& self, const py::array& slots, const std::optional<py::array>& has_indptr,
             const std::optional<py::array>& has_ids, const std::optional<py::array>& not_indptr,
             const std::optional<py::array>& not_ids, const PyGrades& grades) {
            const auto* s = checked<std::int64_t>(slots, "slots", 1);
            const auto n = static_cast<std::size_t>(slots.size());
            const ConceptLists has = lists(has_indptr, has_ids, n, "has");
            const ConceptLists not_has = lists(not_indptr, not_ids, n, "not_has");
            const ConceptGrades graded = grade_lists(grades, n);
            py::gil_scoped_release release;
            self.set_concepts(s, n, has, not_has, graded);
          },
          py::arg("slots"), py::arg("has_indptr"), py::arg("has_ids"), py::arg("not_indptr"), py::arg("not_ids"),
          py::arg("grades") = py::none())
      .def("set_vectors",
           [](Index& self, const py::array& slots, const PyVectors& vectors) {
             const auto* s = checked<std::int64_t>(slots, "slots", 1);
             const VectorInput in = vector_input(vectors);
             py::gil_scoped_release release;
             self.set_vectors(s, static_cast<std::size_t>(slots.size()), in);
           })
      .def("remove",
           [](Index& self, const py::array& slots) {
             const auto* s = checked<std::int64_t>(slots, "slots", 1);
             py::gil_scoped_release release;
             self.remove(s, static_cast<std::size_t>(slots.size()));
           })
      .def("compact", &compacted<Index>)
      .def("ensure_concepts", &Index::ensure_concepts, py::call_guard<py::gil_scoped_release>())
      .def(
          "search",
          [](const Index& self, const SearchRequest& request) {
            SearchResult result;
            {
              py::gil_scoped_release release;
              result = self.search(request);
            }
            return result_tuple(result);
          },
          py::arg("request"))
      .def(
          "search",
          [](const Index& self, const std::vector<SearchRequest>& requests) {
            std::vector<SearchResult> results;
            {
              py::gil_scoped_release release;
              results = self.search(requests);
            }
            py::list out;
            for (const auto& r : results) out.append(result_tuple(r));
            return out;
          },
          py::arg("requests"), "One request -> one result tuple; a list of requests -> a list of them.")
      .def("save_ann", &Index::save_ann, py::arg("space"), py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def("load_ann", &Index::load_ann, py::arg("space"), py::arg("path"),
           py::arg("new_of_old") = std::vector<std::int64_t>{}, py::call_guard<py::gil_scoped_release>())
      .def("defer_ann", &Index::defer_ann)
      .def("ann_size", &Index::ann_size, py::arg("space"))
      .def_property_readonly("size", &Index::size)
      .def_property_readonly("live_count", &Index::live_count)
      .def_property_readonly("num_concepts", &Index::num_concepts)
      .def_property_readonly("memory_bytes", &Index::memory_bytes)
      .def("is_live", &Index::is_live)
      .def("slots_with",
           [](const Index& self, const py::array& has, const py::array& not_has) {
             const auto* h = checked<std::uint32_t>(has, "has", 1);
             const auto* n = checked<std::uint32_t>(not_has, "not_has", 1);
             const std::vector<std::uint32_t> has_ids(h, h + has.size()), not_ids(n, n + not_has.size());
             std::vector<std::int64_t> slots;
             {
               py::gil_scoped_release release;
               slots = self.slots_with(has_ids, not_ids);
             }
             return to_numpy(slots);
           })
      .def("concept_states", [](const Index& self, const py::array& slots, const py::array& concepts) {
        const auto* s = checked<std::int64_t>(slots, "slots", 1);
        const auto* c = checked<std::uint32_t>(concepts, "concepts", 1);
        const std::vector<std::uint32_t> ids(c, c + concepts.size());
        std::vector<std::int8_t> states;
        {
          py::gil_scoped_release release;
          states = self.concept_states(s, static_cast<std::size_t>(slots.size()), ids);
        }
        return to_numpy(states).reshape({static_cast<py::ssize_t>(slots.size()), static_cast<py::ssize_t>(ids.size())});
      });
  py::class_<TextEncoder, std::shared_ptr<TextEncoder>>(m, "TextEncoder",
                                                        "A BERT-style sentence encoder on 8-bit linear layers "
                                                        "(cpp/include/polarmem/text_encoder.hpp).")
      .def(py::init([](std::size_t layers, std::size_t hidden, std::size_t heads, std::size_t intermediate,
                       std::size_t max_positions, float layer_norm_eps, const py::dict& weights) {
             TransformerConfig config{layers, hidden, heads, intermediate, max_positions, layer_norm_eps};
             TensorMap tensors;
             for (const auto& [key, value] : weights) {
               const std::string name = py::str(key);
               const auto array = py::cast<py::array>(value);
               const float* data = checked<float>(array, name.c_str(), array.ndim());
               TensorView view{data, {}};
               for (py::ssize_t d = 0; d < array.ndim(); ++d)
                 view.shape.push_back(static_cast<std::size_t>(array.shape(d)));
               tensors[name] = view;
             }
             return std::make_shared<TextEncoder>(config, tensors);
           }),
           py::arg("layers"), py::arg("hidden"), py::arg("heads"), py::arg("intermediate"), py::arg("max_positions"),
           py::arg("layer_norm_eps"), py::arg("weights"))
      .def(
          "encode",
          [](const TextEncoder& self, const py::array& ids, const py::array& lengths) {
            const auto* i = checked<std::int32_t>(ids, "ids", 1);
            const auto* n = checked<std::int32_t>(lengths, "lengths", 1);
            std::int64_t total = 0;
            for (py::ssize_t t = 0; t < lengths.size(); ++t) total += n[t];
            if (total != ids.size()) throw py::value_error("ids must hold sum(lengths) token ids");
            py::array_t<float> out({static_cast<py::ssize_t>(lengths.size()), static_cast<py::ssize_t>(self.dim())});
            float* o = out.mutable_data();
            {
              py::gil_scoped_release release;
              self.encode(i, n, static_cast<std::size_t>(lengths.size()), o);
            }
            return out;
          },
          py::arg("ids"), py::arg("lengths"),
          "L2-normalised mean-pooled vectors (len(lengths), dim) of texts given as token ids back to back.")
      .def_property_readonly("dim", &TextEncoder::dim)
      .def_property_readonly("kernel", [](const TextEncoder& self) { return std::string(self.kernel_name()); });
  py::class_<EncodingCache, std::shared_ptr<EncodingCache>>(
      m, "EncodingCache", "Recent short texts' vectors by token ids (cpp/include/polarmem/encoding_cache.hpp).")
      .def(py::init<std::size_t, std::size_t>(), py::arg("capacity"), py::arg("dim"))
      .def_property_readonly("hits", &EncodingCache::hits)
      .def_property_readonly("misses", &EncodingCache::misses)
      .def("__len__", &EncodingCache::size);
  py::class_<SharedTextRuns, std::shared_ptr<SharedTextRuns>>(
      m, "SharedTextRuns",
      "Concurrent text calls sharing the encoder's passes (cpp/include/polarmem/shared_text_runs.hpp).")
      .def(py::init([](std::shared_ptr<TextEncoder> encoder, std::size_t max_runs, std::size_t max_tokens,
                       std::shared_ptr<EncodingCache> cache, bool share) {
             return std::make_shared<SharedTextRuns>(std::move(encoder), max_runs, max_tokens, std::move(cache), share);
           }),
           py::arg("encoder"), py::arg("max_runs"), py::arg("max_tokens") = 1024, py::arg("cache") = nullptr,
           py::arg("share") = true)
      .def(
          "encode",
          [](const SharedTextRuns& self, std::vector<std::vector<std::int32_t>> texts) {
            py::array_t<float> out({static_cast<py::ssize_t>(texts.size()), static_cast<py::ssize_t>(self.dim())});
            float* o = out.mutable_data();
            {
              py::gil_scoped_release release;
              self.encode_many(texts, o);
            }
            return out;
          },
          py::arg("texts"), "L2-normalised mean-pooled vectors (len(texts), dim) of texts given as token-id lists")
      .def_property_readonly_static(
          "weighted", [](const py::object&) { return ScopedCallWeight::available(); },
          "whether a pass's thread gets the scheduler weight of the calls waiting on it "
          "(cpp/include/polarmem/call_weight.hpp: needs CAP_SYS_NICE or RLIMIT_NICE)");

  polarmem::bindings::bind_text(m);
  polarmem::bindings::bind_checks(m);
  polarmem::bindings::bind_wordpiece(m);
  polarmem::bindings::bind_kv(m);
}
