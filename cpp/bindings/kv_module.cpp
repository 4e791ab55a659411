// The local store's RocksDB handle (cpp/src/kv_store.cpp) inside polarmem_server._core. Keys and
// values cross as bytes; RocksDB's failures raise KvError with RocksDB's own text. Calls that
// wait on the disk (open, write, sync, checkpoint, repair) release the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "polarmem/kv_store.hpp"

namespace py = pybind11;
using polarmem::KvAccess;
using polarmem::KvBatch;
using polarmem::KvIterator;
using polarmem::KvOpenOptions;
using polarmem::KvStore;

namespace {

py::bytes to_bytes(std::string_view bytes) { return {bytes.data(), bytes.size()}; }

py::object optional_bytes(const std::optional<std::string>& value) {
  return value ? py::object(to_bytes(*value)) : py::object(py::none());
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

  py::class_<KvStore>(m, "KvStore", "a RocksDB store with column families (table format 5)")
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
             return std::make_unique<KvStore>(path, families, options);
           }),
           py::arg("path"), py::arg("families"), py::kw_only(), py::arg("access") = "read_write",
           py::arg("secondary_path") = "", py::arg("info_log_dir") = "", py::arg("create_if_missing") = false,
           py::arg("create_missing_column_families") = false, py::arg("paranoid_checks") = true,
           py::arg("db_write_buffer_size") = 0, py::arg("point_in_time") = false)
      .def_static("list_families", &KvStore::list_families, py::arg("path"))
      .def_static("repair", &KvStore::repair, py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def("close", &KvStore::close, py::call_guard<py::gil_scoped_release>())
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
}

}  // namespace polarmem::bindings
