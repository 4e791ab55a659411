// The local store's RocksDB handle (cpp/src/kv_store.cpp) inside polarmem_server._core. Keys and
// values cross as bytes; RocksDB's failures raise KvError with RocksDB's own text. Calls that
// wait on the disk (open, write, sync, checkpoint, repair) release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "polarmem/content_id.hpp"
#include "polarmem/item_layout.hpp"
#include "polarmem/item_writes.hpp"
#include "polarmem/kv_store.hpp"
#include "polarmem/store_writes.hpp"

namespace py = pybind11;
using polarmem::KvAccess;
using polarmem::KvBatch;
using polarmem::KvIterator;
using polarmem::KvOpenOptions;
using polarmem::KvStore;
using polarmem::StoreWrites;
using polarmem::WriteFailure;

namespace {

py::bytes to_bytes(std::string_view bytes) { return {bytes.data(), bytes.size()}; }

py::object optional_bytes(const std::optional<std::string>& value) {
  return value ? py::object(to_bytes(*value)) : py::object(py::none());
}

using FloatRows = py::array_t<float, py::array::c_style | py::array::forcecast>;

template <typename T>
py::array_t<T> to_array(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

// The decoded index records of a batch, as the CSR arrays NamespaceIndex.add reads
// (storage/local/index_record.py IndexRecordBatch).
py::tuple decode_batch(const std::vector<std::string_view>& values) {
  std::vector<std::uint8_t> kinds;
  std::vector<std::int64_t> has_indptr{0}, not_indptr{0}, scored_indptr{0};
  std::vector<std::uint32_t> has, not_has, align, scored_ids;
  std::vector<float> scored_means;
  std::vector<bool> posterior;
  std::uint64_t scored = 0;
  py::list metadata;
  for (std::size_t row = 0; row < values.size(); ++row) {
    const polarmem::layout::IndexFields f = polarmem::layout::decode_index_record(values[row]);
    kinds.push_back(f.kind);
    has.insert(has.end(), f.has.begin(), f.has.end());
    not_has.insert(not_has.end(), f.not_has.begin(), f.not_has.end());
    align.insert(align.end(), f.align.begin(), f.align.end());
    scored_ids.insert(scored_ids.end(), f.scored_ids.begin(), f.scored_ids.end());
    scored_means.insert(scored_means.end(), f.scored_means.begin(), f.scored_means.end());
    has_indptr.push_back(static_cast<std::int64_t>(has.size()));
    not_indptr.push_back(static_cast<std::int64_t>(not_has.size()));
    scored_indptr.push_back(static_cast<std::int64_t>(scored_ids.size()));
    posterior.push_back(f.posterior);
    scored += f.scored;
    if (!f.metadata.empty()) metadata.append(py::make_tuple(row, f.metadata));
  }
  py::array_t<bool> posterior_array(static_cast<py::ssize_t>(posterior.size()));
  std::copy(posterior.begin(), posterior.end(), posterior_array.mutable_data());
  return py::make_tuple(to_array(kinds), to_array(has_indptr), to_array(has), to_array(not_indptr), to_array(not_has),
                        to_array(align), scored, to_array(scored_indptr), to_array(scored_ids), to_array(scored_means),
                        posterior_array, metadata);
}

const char* failure_name(WriteFailure failure) {
  switch (failure) {
    case WriteFailure::none: return nullptr;
    case WriteFailure::disk_full: return "disk_full";
    case WriteFailure::io_error: return "io_error";
  }
  return nullptr;
}

// A Python callable the core keeps and calls from whatever thread writes: its reference is only
// touched with the GIL held, and an exception it raises is reported as unraisable (a watcher's
// bug never fails the write it was told of).
std::shared_ptr<py::object> held_callable(py::object callable) {
  return std::shared_ptr<py::object>(new py::object(std::move(callable)), [](py::object* held) {
    py::gil_scoped_acquire gil;
    delete held;
  });
}

template <typename... Args>
void call_python(const std::shared_ptr<py::object>& callable, Args&&... args) {
  py::gil_scoped_acquire gil;
  try {
    (*callable)(std::forward<Args>(args)...);
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("a store write watcher");
  }
}

KvAccess access_named(const std::string& name) {
  if (name == "read_write") return KvAccess::read_write;
  if (name == "read_only") return KvAccess::read_only;
  if (name == "secondary") return KvAccess::secondary;
  throw py::value_error("access must be 'read_write', 'read_only' or 'secondary', got '" + name + "'");
}

}  // namespace

namespace polarmem::bindings {

void bind_kv(py::module_& m) {
  py::register_exception<polarmem::KvError>(m, "KvError");

  py::class_<KvBatch>(m, "KvBatch", "operations written together by KvStore.write")
      .def(py::init<>())
      .def("put", &KvBatch::put, py::arg("family"), py::arg("key"), py::arg("value"))
      .def("delete", &KvBatch::remove, py::arg("family"), py::arg("key"))
      .def("delete_range", &KvBatch::remove_range, py::arg("family"), py::arg("begin"), py::arg("end"),
           "deletes the keys from begin (included) to end (excluded)");

  py::class_<KvIterator>(m, "KvIterator", "a forward scan of one column family")
      .def("seek", &KvIterator::seek, py::arg("key"))
      .def("seek_to_first", &KvIterator::seek_to_first)
      .def("valid", &KvIterator::valid)
      .def("next", &KvIterator::next)
      .def(
          "take",
          [](KvIterator& it, std::string_view prefix, std::size_t limit) {
            const auto entries = it.take(prefix, limit);
            py::list out(entries.size());
            for (std::size_t i = 0; i < entries.size(); ++i)
              out[i] = py::make_tuple(to_bytes(entries[i].first), to_bytes(entries[i].second));
            return out;
          },
          py::arg("prefix"), py::arg("limit"),
          "up to `limit` (key, value) pairs from here on while the keys start with `prefix`, moving past them")
      .def("check_status", &KvIterator::check_status, "raises KvError when an error ended the scan");

  py::class_<KvStore, std::shared_ptr<KvStore>>(m, "KvStore", "a RocksDB store with column families (table format 5)")
      .def(py::init([](const std::string& path, const std::vector<std::string>& families, const std::string& access,
                       const std::string& secondary_path, const std::string& info_log_dir, bool create_if_missing,
                       bool create_missing_column_families, bool paranoid_checks, std::size_t db_write_buffer_size,
                       bool point_in_time) {
             KvOpenOptions options;
             options.access = access_named(access);
             options.secondary_path = secondary_path;
             options.info_log_dir = info_log_dir;
             options.create_if_missing = create_if_missing;
             options.create_missing_column_families = create_missing_column_families;
             options.paranoid_checks = paranoid_checks;
             options.db_write_buffer_size = db_write_buffer_size;
             options.wal_recovery =
                 point_in_time ? polarmem::WalRecovery::point_in_time : polarmem::WalRecovery::absolute_consistency;
             py::gil_scoped_release release;
             return std::make_shared<KvStore>(path, families, options);
           }),
           py::arg("path"), py::arg("families"), py::kw_only(), py::arg("access") = "read_write",
           py::arg("secondary_path") = "", py::arg("info_log_dir") = "", py::arg("create_if_missing") = false,
           py::arg("create_missing_column_families") = false, py::arg("paranoid_checks") = true,
           py::arg("db_write_buffer_size") = 0, py::arg("point_in_time") = false)
      .def_static("list_families", &KvStore::list_families, py::arg("path"))
      .def_static("repair", &KvStore::repair, py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def("close", &KvStore::close, py::call_guard<py::gil_scoped_release>())
      .def("reopen", &KvStore::reopen, py::call_guard<py::gil_scoped_release>())
      .def(
          "get",
          [](const KvStore& self, std::string_view family, std::string_view key) {
            return optional_bytes(self.get(family, key));
          },
          py::arg("family"), py::arg("key"), "the value, None where the key is absent")
      .def(
          "multi_get",
          [](const KvStore& self, std::string_view family, const std::vector<std::string>& keys) {
            const auto values = self.multi_get(family, keys);
            py::list out(values.size());
            for (std::size_t i = 0; i < values.size(); ++i) out[i] = optional_bytes(values[i]);
            return out;
          },
          py::arg("family"), py::arg("keys"))
      .def("write", &KvStore::write, py::arg("batch"), py::arg("sync"), py::call_guard<py::gil_scoped_release>())
      .def("scan", &KvStore::scan, py::arg("family"), py::arg("fill_cache") = true)
      .def("flush_wal", &KvStore::flush_wal, py::arg("sync"), py::call_guard<py::gil_scoped_release>())
      .def("latest_sequence_number", &KvStore::latest_sequence_number)
      .def("catch_up_with_primary", &KvStore::catch_up_with_primary, py::call_guard<py::gil_scoped_release>())
      .def("checkpoint", &KvStore::checkpoint, py::arg("dir"), py::call_guard<py::gil_scoped_release>())
      .def("live_table_files", &KvStore::live_table_files);

  // The write-failure policy (polarmem/store_writes.hpp): a full disk raises DiskFullError, an
  // I/O error (or a write while the store reopens, or after close) UnavailableError.
  py::class_<StoreWrites, std::shared_ptr<StoreWrites>>(m, "StoreWrites",
                                                        "the store's writes and what a failed one does until a reopen")
      .def(py::init([](std::shared_ptr<KvStore> store, bool sync, double reopen_interval_s) {
             const auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::duration<double>(reopen_interval_s));
             return std::make_shared<StoreWrites>(std::move(store), sync, interval);
           }),
           py::arg("store"), py::kw_only(), py::arg("sync"), py::arg("reopen_interval_s"))
      .def(
          "write",
          [](StoreWrites& self, KvBatch& batch, const std::string& count_family, const std::string& count_key,
             std::size_t items) {
            self.write(batch, count_family, count_key, items);  // owned copies: the GIL is released
          },
          py::arg("batch"), py::arg("count_family") = "", py::arg("count_key") = py::bytes(), py::arg("items") = 0,
          py::call_guard<py::gil_scoped_release>(),
          "one atomic write; with count_key, that ASCII count bumped in the same batch; `items` it writes, timed")
      .def(
          "write_times",
          [](const StoreWrites& self) {
            const polarmem::WriteTimes times = self.write_times();
            return py::make_tuple(
                std::vector<double>(polarmem::kStoreWriteBounds.begin(), polarmem::kStoreWriteBounds.end()),
                std::vector<std::uint64_t>(times.counts.begin(), times.counts.end()), times.sum);
          },
          "(bucket upper bounds in seconds, items per bucket with +Inf last, total seconds) of the item writes")
      .def("try_resume", &StoreWrites::try_resume, py::call_guard<py::gil_scoped_release>())
      .def("close", &StoreWrites::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly(
          "failure", [](const StoreWrites& self) { return failure_name(self.failure()); },
          "None while writes work, else 'disk_full' or 'io_error'")
      .def(
          "watch",
          [](StoreWrites& self, py::object failed, py::object resumed) {
            auto on_failed = held_callable(std::move(failed));
            auto on_resumed = held_callable(std::move(resumed));
            self.watch([on_failed](WriteFailure kind,
                                   const std::string& message) { call_python(on_failed, failure_name(kind), message); },
                       [on_resumed] { call_python(on_resumed); });
          },
          py::arg("failed"), py::arg("resumed"),
          "failed(kind, message) for each write the disk refuses, resumed() after each successful reopen");
  // A namespace's new items into the store and memory (polarmem/item_writes.hpp).
  py::class_<polarmem::ItemWrites, std::shared_ptr<polarmem::ItemWrites>>(
      m, "ItemWrites", "a namespace's new items: concept records, item keys, one counted write, then memory")
      .def(py::init([](std::string ns, std::shared_ptr<StoreWrites> store,
                       std::shared_ptr<polarmem::NamespaceItems> items,
                       std::shared_ptr<polarmem::ConceptAppends> appends,
                       const std::vector<std::tuple<std::string, std::size_t, bool>>& spaces) {
             std::vector<polarmem::ItemWrites::Space> specs;
             for (const auto& [name, dim, multi] : spaces) specs.push_back({name, dim, multi});
             return std::make_shared<polarmem::ItemWrites>(std::move(ns), std::move(store), std::move(items),
                                                           std::move(appends), std::move(specs));
           }),
           py::arg("ns"), py::arg("store"), py::arg("items"), py::arg("appends"), py::arg("spaces"))
      .def(
          "add",
          [](polarmem::ItemWrites& self, const std::vector<std::string>& records,
             const std::vector<std::vector<std::pair<std::string, FloatRows>>>& vectors, py::object grade) {
            std::vector<std::vector<polarmem::layout::VectorRows>> rows(vectors.size());
            for (std::size_t i = 0; i < vectors.size(); ++i) {
              for (const auto& [space, array] : vectors[i]) {
                if (array.ndim() != 1 && array.ndim() != 2)
                  throw py::value_error("vectors[" + space + "]: expected one row or rows x dim");
                const auto count = array.ndim() == 1 ? 1 : static_cast<std::size_t>(array.shape(0));
                const auto dim = static_cast<std::size_t>(array.shape(array.ndim() - 1));
                rows[i].push_back({space, array.data(), count, dim});
              }
            }
            polarmem::ItemWrites::Grade graded;
            if (!grade.is_none()) {
              auto held = held_callable(std::move(grade));
              graded = [held](const std::vector<std::string>& index_records) -> std::optional<polarmem::OwnedGrades> {
                py::gil_scoped_acquire gil;
                py::list values;
                for (const auto& r : index_records) values.append(to_bytes(r));
                const py::object out = (*held)(values);
                if (out.is_none()) return std::nullopt;
                const auto parts = out.cast<py::tuple>();
                polarmem::OwnedGrades owned;
                owned.indptr = parts[0].cast<std::vector<std::int64_t>>();
                owned.ids = parts[1].cast<std::vector<std::uint32_t>>();
                owned.grades = parts[2].cast<std::vector<std::int8_t>>();
                if (!parts[3].is_none()) owned.confidence = parts[3].cast<std::vector<std::uint8_t>>();
                return owned;
              };
            }
            const std::vector<std::string_view> views(records.begin(), records.end());
            py::gil_scoped_release release;
            self.add(views, rows, graded);
          },
          py::arg("records"), py::arg("vectors"), py::arg("grade") = py::none(),
          "stores new items (serialised records, per item [(space, rows)]) and indexes them; grade(index_records) "
          "-> (indptr, ids, grades, confidence | None) | None");

  m.def(
      "content_id",
      [](const py::bytes& kind, const py::bytes& text, const py::bytes& uri, const py::bytes& content,
         const py::bytes& extra) {
        return polarmem::content_id(std::string_view(kind), std::string_view(text), std::string_view(uri),
                                    std::string_view(content), std::string_view(extra));
      },
      py::arg("kind"), py::arg("text"), py::arg("uri"), py::arg("content"), py::arg("extra"),
      "the id of an item sent without one (polarmem/content_id.hpp)");
  m.attr("STORE_WRITE_BOUNDS") =
      std::vector<double>(polarmem::kStoreWriteBounds.begin(), polarmem::kStoreWriteBounds.end());
  m.def("is_no_space", &polarmem::is_no_space, py::arg("message"), "whether RocksDB's text says the disk is full");

  // The item layout (polarmem/item_layout.hpp): what an item write puts in each column family.
  m.def(
      "put_item",
      [](KvBatch& batch, std::string_view ns, std::string_view record,
         const std::vector<std::pair<std::string, FloatRows>>& vectors, std::string_view previous,
         const std::vector<std::string>& previous_spaces) {
        std::vector<polarmem::layout::VectorRows> rows;
        for (const auto& [space, array] : vectors) {
          if (array.ndim() != 1 && array.ndim() != 2)
            throw py::value_error("vectors[" + space + "]: expected one row or rows x dim");
          const auto count = array.ndim() == 1 ? 1 : static_cast<std::size_t>(array.shape(0));
          const auto dim = static_cast<std::size_t>(array.shape(array.ndim() - 1));
          rows.push_back({space, array.data(), count, dim});
        }
        return to_bytes(polarmem::layout::put_item(batch, ns, record, rows, previous, previous_spaces));
      },
      py::arg("batch"), py::arg("ns"), py::arg("record"), py::arg("vectors"), py::arg("previous") = "",
      py::arg("previous_spaces") = std::vector<std::string>{},
      "adds an item's record, index record, vectors and edges to `batch` (removing `previous`'s edges and its "
      "vectors in `previous_spaces` not replaced); returns the index record");
  m.def("put_concept", &polarmem::layout::put_concept, py::arg("batch"), py::arg("ns"), py::arg("concept_id"),
        py::arg("name"), "adds a concept's record (ConceptRecord) to `batch`");
  m.def("remove_item", &polarmem::layout::remove_item, py::arg("batch"), py::arg("ns"), py::arg("record"),
        py::arg("spaces"), "adds an item's removal (record, index record, vectors in `spaces`, edges) to `batch`");
  m.def(
      "index_record",
      [](std::string_view record) {
        return to_bytes(polarmem::layout::encode_index_record(polarmem::layout::read_item(record).index));
      },
      py::arg("record"), "the compact index record of a serialised ItemRecord");
  m.def(
      "concept_lists",
      [](std::string_view record) {
        const auto f = polarmem::layout::read_item(record).index;
        return py::make_tuple(f.has, f.not_has, f.align, f.scored);
      },
      py::arg("record"), "(HAS ids, NOT_HAS ids, ALIGN ids, scored-concept count) of a serialised ItemRecord");
  m.def("decode_index_records", &decode_batch, py::arg("values"),
        "(kinds, has_indptr, has_ids, not_indptr, not_ids, align_ids, scored, scored_indptr, scored_ids, "
        "scored_means, posterior, metadata [(row, [(key, value)])]) of many index records");
}

}  // namespace polarmem::bindings
