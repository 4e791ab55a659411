// Upper bounds (seconds) of every RPC latency histogram, +Inf after the last: the Python
// listener's polarmem_rpc_latency_seconds (api/metrics.py reads them from here) and the compiled
// front's (cpp/front), whose calls the metrics add into that one histogram, so both must count
// in the same buckets. A native Recall takes well under a millisecond, hence the first bound.
#pragma once

#include <array>

namespace polarmem {

inline constexpr std::array<double, 15> kRpcLatencyBounds{0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                          0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

}  // namespace polarmem
