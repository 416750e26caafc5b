#pragma once
// The keys of every mapping the scenario loader reads, in one registry.
//
// Each mapping of the schema whose keys are fixed is a SchemaMap; the loader's readers take
// one (yaml_fields::MapReader) and can take nothing else, so a mapping the loader reads has an
// entry here by construction. docs/scenario.schema.json describes each of them under
// `definitions/<id>`, and tests/test_scenario_schema.cpp requires that definition's
// `properties` to be exactly these keys (and every closed object of the schema to be one of
// these tables): a key added on one side only fails the test instead of drifting.
#include <string>
#include <vector>

namespace podsim {

enum class SchemaMap {
  Document,
  Hardware,
  HardwareOverrides,
  Topology,
  MeshAxis,
  AxisSplit,
  Simulation,
  WorkloadCollectives,
  WorkloadTraining,
  WorkloadInference,
  WorkloadServing,
  Operation,
  Model,
  ModelMoe,
  ModelAttention,
  TrainingParallelism,
  ModelParallelism,
  Routing,
  Requests,
  Poisson,
  RandomDataset,
  ShareGpt,
  Slo,
  Speculative,
  Prefill,
  Perturbation,
  ChipSelection,
  LinkSelection,
  NicSelection,
  Stragglers,
  Expectation,
  Compare,
  Remat,
  Count
};

struct KeyTable {
  SchemaMap map;
  std::string id;                  // the schema's definitions/<id>
  std::string path;                // where the mapping sits in a scenario, for people
  std::vector<std::string> keys;   // in the order error messages list them
  // Also every mesh axis name (perturbation selections take ranges per axis): the schema
  // gives such a mapping `patternProperties` for axis names beside its fixed keys.
  bool axis_keys = false;
};

const KeyTable& key_table(SchemaMap map);

// Every table, in SchemaMap order.
const std::vector<KeyTable>& key_tables();

// Rebuilds the tables after a calibration parameter registers or leaves (hardware_parameters.hpp):
// hardware.overrides and simulation take their keys from that registry.
void refresh_key_tables();

}  // namespace podsim
