// Reference for the engine speed bar: the plainest SimGrid 3.32 replay of a one-way ring
// AllGather along X of an X*Y*Z torus, one actor per chip, one mailbox per chip with a permanent
// receiver, put_async/get per step (the field notes' "naive" design). Prints messages/s.
// The yardstick of issue 9 (the project's plain SimGrid ring replay), unchanged but for this comment;
// `podsim bench --compare-naive` runs it beside the engine: podsim_naive_ring X Y Z bytes.
#include <simgrid/s4u.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
namespace sg4 = simgrid::s4u;
int main(int argc, char** argv) {
  sg4::Engine e(&argc, argv);
  const int X = std::stoi(argv[1]), Y = std::stoi(argv[2]), Z = std::stoi(argv[3]);
  const double bytes = std::stod(argv[4]);  // shard bytes per hop
  e.set_config("network/model:CM02");
  e.set_config("network/crosstraffic:0");
  e.set_config("network/TCP-gamma:1e18");
  e.set_config("contexts/stack-size:128");
  auto* zone = sg4::create_full_zone("pod");
  const int n = X * Y * Z;
  std::vector<sg4::Host*> hosts(n);
  for (int i = 0; i < n; ++i) hosts[i] = zone->create_host("c" + std::to_string(i), 1e12);
  auto right = [&](int i) { int x = i % X; return i - x + (x + 1) % X; };
  for (int i = 0; i < n; ++i) {
    auto* l = zone->create_link("l" + std::to_string(i), 45e9)->set_latency(1e-6)->seal();
    zone->add_route(hosts[i]->get_netpoint(), hosts[right(i)]->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(l)}, false);
  }
  zone->seal();
  long messages = 0;
  for (int i = 0; i < n; ++i) {
    sg4::Actor::create("chip", hosts[i], [&, i] {
      auto* in = sg4::Mailbox::by_name("m" + std::to_string(i));
      in->set_receiver(sg4::Actor::self());
      auto* out = sg4::Mailbox::by_name("m" + std::to_string(right(i)));
      static int token = 0;
      for (int step = 0; step < X - 1; ++step) {
        out->put_init(&token, static_cast<uint64_t>(bytes))->detach();
        messages++;
        in->get<int>();
      }
    });
  }
  auto t0 = std::chrono::steady_clock::now();
  e.run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("chips=%d messages=%ld simulated_s=%.9f wall_s=%.3f messages_per_s=%.0f\n", n, messages, e.get_clock(), wall,
         messages / wall);
}
