#pragma once
// A second, SimGrid-free model of a ring collective's hop schedule, for the one case the closed
// form in formulas.hpp (ring_schedule_time) does not cover: parts whose phases share an axis's
// links at the same time (multi-axis rings over lines, or rings whose parts' phases do not
// line up). There the time depends on how the overlapping phases share bandwidth, which has no
// closed form (docs/validation.md shows how irregular it is); this model computes it from the
// same schedule (ring_parts, ring_chains) and the replay's rules, written out independently:
//  - each chip runs its parts at once and each part's phases in order; a phase is done on a
//    chip when its chains have received all their messages;
//  - a chain sends its own message when its phase starts, then forwards each of the first
//    `forwards` messages it receives, when it has received it;
//  - a message occupies one directed link; the messages on a link share its bandwidth equally
//    (max-min sharing of single-link flows);
//  - a chain's messages cross one at a time, in the order sent: each moves from the later of
//    its send and the landing of the one before it (or its chain's start);
//  - floor hop model: a message is usable at max(its arrival, sent + T_min).
// Wrapped axes are collapsed to one position (every chip of a ring does the same at the same
// time); lines are kept whole. Things due within 1 ns happen together, floors before arrivals,
// and phases that start because others ended start after the chains that ended them have run.
// Where parts overlap, which of two simultaneous events goes first can change the time by
// several percent, in the replay too (where rounding decides: a 6x4 line AllReduce takes 59.5
// or 65.3 small-message times depending on V alone); this model does not follow SimGrid's
// order of simultaneous events beyond the rules above (docs/validation.md lists the meshes
// where the two differ).
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/formulas.hpp"

namespace podsim {

// Time (s) of a bidirectional ring collective of V = bytes over `axes` on links of w_uni B/s
// each way with T_min = t_min. Throws std::invalid_argument for AllToAll and on the inputs
// ring_schedule_time rejects.
double ring_fluid_time_s(CollectiveKind kind, const std::vector<AxisInfo>& axes, double bytes, double w_uni,
                         double t_min);

}  // namespace podsim
