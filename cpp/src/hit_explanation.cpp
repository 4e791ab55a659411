#include "polarmem/hit_explanation.hpp"

#include <cstdio>
#include <stdexcept>

namespace polarmem::explain {

namespace {

// Python's f"{value:.2f}": both round the exact binary value half to even.
std::string two_places(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

std::string reason(const char* state, const std::string& name, const Cited& cited, double tau, double delta) {
  std::string out = std::string(state) + "(" + name + ")";
  if (cited.scored) return out + " p=" + two_places(cited.mean) + " τ=" + two_places(tau) + " δ=" + two_places(delta);
  return out + " source=" + (cited.source.empty() ? std::string("client") : std::string(cited.source));
}

}  // namespace

Explanation explain_hit(int tier, std::size_t required, const std::vector<std::string>& names,
                        const std::vector<Cited>& cited, double tau, double delta, bool with_reasons) {
  if (cited.size() != names.size() || required > names.size()) {
    throw std::invalid_argument("explain_hit: one cited state per query concept, the required ones first");
  }
  Explanation out;
  out.absence_verified = names.size() > required;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Cited& c = cited[i];
    if (i < required) {
      if (c.state == 1) {
        if (tier != -1) out.entailed.push_back(i);
        if (with_reasons) out.reasons.push_back(reason("HAS", names[i], c, tau, delta));
      } else if (c.state == -1) {
        out.conflicted.push_back(i);
        if (with_reasons) out.reasons.push_back(reason("NOT_HAS", names[i], c, tau, delta));
      }
    } else {
      if (c.state == 1) {
        out.conflicted.push_back(i);
        if (with_reasons) out.reasons.push_back(reason("HAS", names[i], c, tau, delta) + " forbidden");
      }
      out.absence_verified = out.absence_verified && c.state == -1;
    }
  }
  return out;
}

}  // namespace polarmem::explain
