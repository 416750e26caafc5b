#pragma once
// `podsim validate`: simulated collectives against the book's closed forms over a grid of
// collectives x axes x meshes x sizes. Where a row leaves the book's formula by more than 1%,
// it names each effect of podsim's schedule that separates them with its predicted size, and
// checks the simulated time against the prediction: a row more than 1% from its prediction is
// `unexplained`, and any unexplained row makes `podsim validate` fail. Derivations:
// docs/validation.md.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/formulas.hpp"

namespace podsim {

// What podsim's schedule predicts for one collective, and why it differs from the book.
struct Prediction {
  double time_s = 0;                 // 0: no model covers this case
  std::string method;                // "closed form", "fluid model", or empty (none)
  std::vector<std::string> effects;  // each effect with its predicted size, in order
  double lower_bound_s = 0;          // a proven lower bound when time_s is a model's (else 0)
};

// Predicts the simulated time of a bidirectional collective over `axes` (floor hop model):
// rings by ring_schedule_time, and by ring_fluid_time_s where parts overlap; AllToAll by
// all_to_all_route_time. `names` name the axes in the effects' text; `book` is
// book_collective_time for the same inputs. Effects are those that move the prediction away
// from the book's time by more than 0.1%, each with its size.
Prediction predict_collective(CollectiveKind kind, const std::vector<AxisInfo>& axes,
                              const std::vector<std::string>& names, double bytes, double w_uni, double t_min,
                              const FormulaResult& book);

enum class RowStatus {
  Book,         // within 1% of the book's formula and of the prediction (if there is one)
  Explained,    // outside 1% of the book, within 1% of the prediction
  Unexplained,  // more than 1% from the prediction, or outside the book's 1% with no prediction
};
std::string_view to_string(RowStatus status);

struct ValidationRow {
  std::string collective;
  std::string axes;        // e.g. "XY"
  std::string mesh;        // e.g. "v5e 8x4"
  std::string wraparound;  // per involved axis, e.g. "yes", "no", "X:yes Y:no"
  double bytes = 0;
  double analytic_s = 0;   // the book's formula
  double simulated_s = 0;
  double rel_error = 0;    // simulated vs the book
  double predicted_s = 0;  // podsim's schedule (0: none)
  double predicted_error = 0;   // simulated vs predicted
  std::string method;      // how predicted_s was computed
  std::string regime;
  RowStatus status = RowStatus::Book;
  std::string note;        // empty for Book rows; else the effects and their sizes, or why unexplained
};

// Status and note of a row from its times and its prediction (the check `validate` makes).
void judge_row(ValidationRow& row, const Prediction& prediction);

struct ValidationOptions {
  bool quick = false;      // a smaller grid (the test suite's)
  // Self-test: every prediction is scaled by (1 + prediction_skew) before the check, so a
  // non-zero skew beyond 1% must make rows unexplained and the command fail.
  double prediction_skew = 0;
  std::function<void(const std::string&)> progress;   // called per block of rows
};

struct ValidationResult {
  std::vector<ValidationRow> rows;
  std::vector<std::string> skipped;   // grid points not replayed, with the reason
};

ValidationResult run_validation(const ValidationOptions& options);
std::string validation_csv(const std::vector<ValidationRow>& rows);

}  // namespace podsim
