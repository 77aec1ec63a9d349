// The schedule (PTPROF_SCHEDULE) and the step rule (PTPROF_STEP):
// parse_schedule / parse_step_rule / Schedule::action from
// common/include/ptprof/schedule.hpp, checked against torch's own
// torch.profiler.schedule.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "ptprof/config.hpp"
#include "ptprof/schedule.hpp"

using ptprof::parse_schedule;
using ptprof::parse_step_rule;
using ptprof::Schedule;
using ptprof::StepAction;
using ptprof::StepRule;

namespace {

Schedule parse_ok(const std::string& text) {
  auto s = parse_schedule(text);
  INFO("input: '" << text << "', error: " << s.error());
  REQUIRE(s.ok());
  CHECK(s.error().empty());
  return *s;
}

std::string parse_error(const std::string& text) {
  auto s = parse_schedule(text);
  INFO("input: '" << text << "'");
  CHECK_FALSE(s.ok());
  CHECK_FALSE(s.error().empty());
  return s.error();
}

// Every error message says what is accepted: the keys and the kind of value.
void check_names_accepted(const std::string& error) {
  INFO("message: " << error);
  CHECK_THAT(error, Catch::Contains("accepted"));
  for (const char* key : {"skip_first", "wait", "warmup", "active", "repeat"}) CHECK_THAT(error, Catch::Contains(key));
  CHECK_THAT(error, Catch::Contains("non-negative whole number"));
}

char letter(StepAction a) {
  switch (a) {
    case StepAction::None:
      return 'N';
    case StepAction::Warmup:
      return 'W';
    case StepAction::Record:
      return 'R';
    case StepAction::RecordAndSave:
      return 'S';
  }
  return '?';
}

}  // namespace

TEST_CASE("parse_schedule: empty text means no schedule", "[schedule]") {
  for (const char* text : {"", " ", "\t", "  \t "}) {
    INFO("input: '" << text << "'");
    Schedule s = parse_ok(text);
    CHECK_FALSE(s.enabled);
    CHECK(s.to_string().empty());
    for (uint64_t step : {0ull, 1ull, 7ull, 1000000ull}) CHECK(s.action(step) == StepAction::Record);
    CHECK_FALSE(s.finished_after(1000000));
  }
}

TEST_CASE("parse_schedule: good inputs", "[schedule]") {
  SECTION("all keys") {
    Schedule s = parse_ok("skip_first=1,wait=2,warmup=3,active=4,repeat=5");
    CHECK(s.enabled);
    CHECK(s.skip_first == 1);
    CHECK(s.wait == 2);
    CHECK(s.warmup == 3);
    CHECK(s.active == 4);
    CHECK(s.repeat == 5);
  }
  SECTION("the tutorial's schedule") {
    Schedule s = parse_ok("wait=1,warmup=1,active=3,repeat=2");
    CHECK(s.enabled);
    CHECK(s.skip_first == 0);
    CHECK(s.wait == 1);
    CHECK(s.warmup == 1);
    CHECK(s.active == 3);
    CHECK(s.repeat == 2);
  }
  SECTION("any order, spaces and tabs around items, keys and values") {
    Schedule s = parse_ok(" repeat = 2 ,\tactive=3 , warmup =1,wait= 1 , skip_first=\t4 ");
    CHECK(s.skip_first == 4);
    CHECK(s.wait == 1);
    CHECK(s.warmup == 1);
    CHECK(s.active == 3);
    CHECK(s.repeat == 2);
  }
  SECTION("a subset: the others keep torch's defaults (active=1, the rest 0)") {
    Schedule s = parse_ok("wait=2");
    CHECK(s.enabled);
    CHECK(s.skip_first == 0);
    CHECK(s.wait == 2);
    CHECK(s.warmup == 0);
    CHECK(s.active == 1);
    CHECK(s.repeat == 0);
    Schedule t = parse_ok("active=5");
    CHECK(t.active == 5);
    CHECK(t.wait == 0);
    CHECK(t.repeat == 0);
  }
  SECTION("zeros are accepted where torch accepts them") {
    Schedule s = parse_ok("skip_first=0,wait=0,warmup=0,active=1,repeat=0");
    CHECK(s.enabled);
    CHECK(s.active == 1);
  }
  SECTION("leading zeros and the largest accepted value") {
    CHECK(parse_ok("wait=007").wait == 7);
    CHECK(parse_ok("skip_first=1099511627776").skip_first == (1ull << 40));
  }
  SECTION("to_string round-trips") {
    Schedule s = parse_ok("active=3,skip_first=2,repeat=4,warmup=1,wait=5");
    CHECK(s.to_string() == "skip_first=2,wait=5,warmup=1,active=3,repeat=4");
    Schedule t = parse_ok(s.to_string());
    CHECK(t.to_string() == s.to_string());
  }
  SECTION("the result alone tells success from failure") {
    CHECK(parse_schedule("wait=1,active=2").ok());
    CHECK_FALSE(parse_schedule("wait=x").ok());
    CHECK_FALSE(parse_schedule("bogus=1").ok());
    CHECK_FALSE(parse_schedule("active=0").ok());
  }
}

TEST_CASE("parse_schedule: an unknown key is named", "[schedule]") {
  for (const char* text : {"foo=1", "wait=1,foo=2", "WAIT=1", "skip-first=1", "skip=1", "warm_up=1", "activ=3"}) {
    std::string error = parse_error(text);
    std::string input(text);
    std::string key = input.substr(input.rfind(',') == std::string::npos ? 0 : input.rfind(',') + 1);
    key = key.substr(0, key.find('='));
    INFO("message: " << error);
    CHECK_THAT(error, Catch::Contains("unknown key"));
    CHECK_THAT(error, Catch::Contains("'" + key + "'"));
    check_names_accepted(error);
  }
}

TEST_CASE("parse_schedule: a bad value names the key and the value", "[schedule]") {
  struct Case {
    const char* text;
    const char* key;
    const char* value;
  };
  const Case cases[] = {
      {"wait=-1", "wait", "-1"},
      {"warmup=abc", "warmup", "abc"},
      {"active=", "active", ""},
      {"active= ", "active", ""},
      {"repeat=1.5", "repeat", "1.5"},
      {"skip_first=0x10", "skip_first", "0x10"},
      {"wait=+1", "wait", "+1"},
      {"wait=1 2", "wait", "1 2"},
      {"wait=3x", "wait", "3x"},
      {"active=99999999999999999999999", "active", "99999999999999999999999"},  // overflows 64 bits
      {"repeat=1099511627777", "repeat", "1099511627777"},                      // above 2^40
      {"wait=1,active=two", "active", "two"},
      {"wait==1", "wait", "=1"},
  };
  for (const Case& c : cases) {
    std::string error = parse_error(c.text);
    INFO("input: '" << c.text << "', message: " << error);
    CHECK_THAT(error, Catch::Contains("'" + std::string(c.key) + "'"));
    CHECK_THAT(error, Catch::Contains("value '" + std::string(c.value) + "'"));
    check_names_accepted(error);
  }
}

TEST_CASE("parse_schedule: active=0 is refused, as torch refuses it", "[schedule]") {
  for (const char* text : {"active=0", "wait=1,active=0", "active=00"}) {
    std::string error = parse_error(text);
    INFO("message: " << error);
    CHECK_THAT(error, Catch::Contains("'active'"));
    CHECK_THAT(error, Catch::Contains("'0'"));
    CHECK_THAT(error, Catch::Contains("at least 1"));
    check_names_accepted(error);
  }
}

TEST_CASE("parse_schedule: a key given twice is named", "[schedule]") {
  for (const char* text : {"wait=1,wait=2", "active=2,wait=1,active=2", "repeat=1, repeat =1"}) {
    std::string error = parse_error(text);
    INFO("message: " << error);
    CHECK_THAT(error, Catch::Contains("given twice"));
    check_names_accepted(error);
  }
  CHECK_THAT(parse_error("wait=1,wait=2"), Catch::Contains("'wait'"));
  CHECK_THAT(parse_error("active=2,wait=1,active=2"), Catch::Contains("'active'"));
}

TEST_CASE("parse_schedule: an item without '=' is named", "[schedule]") {
  struct Case {
    const char* text;
    const char* item;  // the first bad item
  };
  const Case cases[] = {
      {"wait", "wait"}, {"wait 1", "wait 1"}, {"wait=1,active", "active"}, {"1,2,3", "1"}, {"active:3", "active:3"},
  };
  for (const Case& c : cases) {
    std::string error = parse_error(c.text);
    INFO("input: '" << c.text << "', message: " << error);
    CHECK_THAT(error, Catch::Contains("'" + std::string(c.item) + "'"));
    CHECK_THAT(error, Catch::Contains("'='"));
    check_names_accepted(error);
  }
}

TEST_CASE("parse_schedule: an empty item is refused", "[schedule]") {
  for (const char* text : {"wait=1,,active=2", ",wait=1", " , ", "wait=1, ,active=2", "wait=1,", "active=2 , "}) {
    std::string error = parse_error(text);
    INFO("message: " << error);
    CHECK_THAT(error, Catch::Contains("empty item"));
    check_names_accepted(error);
  }
}

// Expected actions, produced by torch 1.13's own schedule with Debian's
// python3-torch:
//
//   /usr/bin/python3 - <<'PY'
//   from torch.profiler import schedule, ProfilerAction
//   L = {ProfilerAction.NONE: "N", ProfilerAction.WARMUP: "W",
//        ProfilerAction.RECORD: "R", ProfilerAction.RECORD_AND_SAVE: "S"}
//   for c in combos:   # (skip_first, wait, warmup, active, repeat), as below
//       s = schedule(skip_first=c[0], wait=c[1], warmup=c[2], active=c[3], repeat=c[4])
//       print('{%d, %d, %d, %d, %d, "%s"},' % (c + ("".join(L[s(i)] for i in range(40)),)))
//   PY
//
// Letter i is the action for step i: N none, W warmup, R record,
// S record and save (the last step of a window).
struct TorchCase {
  uint64_t skip_first, wait, warmup, active, repeat;
  const char* actions;
};
static const TorchCase kTorchSchedule[] = {
    {0, 0, 0, 1, 0, "SSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSS"},
    {0, 0, 0, 1, 1, "SNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {0, 0, 0, 3, 1, "RRSNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {0, 1, 1, 3, 2, "NWRRSNWRRSNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {0, 1, 1, 3, 0, "NWRRSNWRRSNWRRSNWRRSNWRRSNWRRSNWRRSNWRRS"},
    {2, 1, 1, 2, 0, "NNNWRSNWRSNWRSNWRSNWRSNWRSNWRSNWRSNWRSNW"},
    {0, 0, 1, 1, 0, "WSWSWSWSWSWSWSWSWSWSWSWSWSWSWSWSWSWSWSWS"},
    {1, 2, 0, 1, 3, "NNNSNNSNNSNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {3, 0, 2, 2, 1, "NNNWWRSNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {0, 5, 0, 5, 0, "NNNNNRRRRSNNNNNRRRRSNNNNNRRRRSNNNNNRRRRS"},
    {10, 0, 0, 2, 2, "NNNNNNNNNNRSRSNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {0, 1, 0, 1, 0, "NSNSNSNSNSNSNSNSNSNSNSNSNSNSNSNSNSNSNSNS"},
    {0, 0, 0, 4, 0, "RRRSRRRSRRRSRRRSRRRSRRRSRRRSRRRSRRRSRRRS"},
    {0, 0, 2, 1, 2, "WWSWWSNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {4, 0, 0, 1, 0, "NNNNSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSS"},
    {0, 3, 0, 2, 1, "NNNRSNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"},
    {1, 1, 1, 1, 5, "NNWSNWSNWSNWSNWSNNNNNNNNNNNNNNNNNNNNNNNN"},
    {0, 0, 0, 7, 3, "RRRRRRSRRRRRRSRRRRRRSNNNNNNNNNNNNNNNNNNN"},
    {5, 2, 3, 4, 0, "NNNNNNNWWWRRRSNNWWWRRRSNNWWWRRRSNNWWWRRR"},
    {0, 10, 10, 1, 1, "NNNNNNNNNNWWWWWWWWWWSNNNNNNNNNNNNNNNNNNN"},
};

TEST_CASE("Schedule::action matches torch.profiler.schedule", "[schedule]") {
  for (const TorchCase& c : kTorchSchedule) {
    Schedule s;
    s.enabled = true;
    s.skip_first = c.skip_first;
    s.wait = c.wait;
    s.warmup = c.warmup;
    s.active = c.active;
    s.repeat = c.repeat;
    std::string got;
    for (uint64_t step = 0; c.actions[step]; ++step) got += letter(s.action(step));
    INFO("schedule " << s.to_string());
    CHECK(got == c.actions);

    // The same schedule through the parser.
    Schedule p = parse_ok(s.to_string());
    std::string parsed;
    for (uint64_t step = 0; c.actions[step]; ++step) parsed += letter(p.action(step));
    CHECK(parsed == c.actions);
  }
}

TEST_CASE("Schedule::finished_after: nothing records after it", "[schedule]") {
  for (const TorchCase& c : kTorchSchedule) {
    Schedule s;
    s.enabled = true;
    s.skip_first = c.skip_first;
    s.wait = c.wait;
    s.warmup = c.warmup;
    s.active = c.active;
    s.repeat = c.repeat;
    std::string actions = c.actions;
    INFO("schedule " << s.to_string());
    for (size_t step = 0; step < actions.size(); ++step) {
      INFO("step " << step);
      if (c.repeat == 0) {
        CHECK_FALSE(s.finished_after(step));  // cycles until the end of the run
      } else {
        bool records_later = actions.find_first_of("RS", step + 1) != std::string::npos;
        CHECK(s.finished_after(step) == !records_later);
      }
    }
  }
}

TEST_CASE("Schedule: windows end exactly at RecordAndSave", "[schedule]") {
  // wait=1,warmup=1,active=3,repeat=2 over 10 steps records steps 2-4 and 7-9
  // (3-5 and 8-10 counting from 1, as the tutorial says), two windows.
  Schedule s = parse_ok("wait=1,warmup=1,active=3,repeat=2");
  std::vector<uint64_t> recorded, saves;
  for (uint64_t step = 0; step < 10; ++step) {
    if (Schedule::records(s.action(step))) recorded.push_back(step);
    if (s.action(step) == StepAction::RecordAndSave) saves.push_back(step);
  }
  CHECK(recorded == std::vector<uint64_t>{2, 3, 4, 7, 8, 9});
  CHECK(saves == std::vector<uint64_t>{4, 9});
  CHECK(Schedule::records(StepAction::Record));
  CHECK(Schedule::records(StepAction::RecordAndSave));
  CHECK_FALSE(Schedule::records(StepAction::Warmup));
  CHECK_FALSE(Schedule::records(StepAction::None));
}

TEST_CASE("Schedule: large step numbers do not overflow", "[schedule]") {
  Schedule s = parse_ok("skip_first=1099511627776,wait=1099511627776,warmup=1,active=1099511627776,repeat=0");
  CHECK(s.action(0) == StepAction::None);
  const uint64_t base = 1ull << 40;
  CHECK(s.action(base + base - 1) == StepAction::None);
  CHECK(s.action(base + base) == StepAction::Warmup);
  CHECK(s.action(base + base + 1) == StepAction::Record);
  CHECK(s.action(base + base + base) == StepAction::RecordAndSave);
  CHECK(s.action(base + base + base + 1) == StepAction::None);
}

TEST_CASE("parse_step_rule: the kinds", "[schedule][step]") {
  SECTION("default and optimizer") {
    for (const char* text : {"", " ", "optimizer", " optimizer\t"}) {
      INFO("input: '" << text << "'");
      auto r = parse_step_rule(text);
      REQUIRE(r.ok());
      CHECK(r->kind == StepRule::Kind::Optimizer);
    }
  }
  SECTION("manual") {
    auto r = parse_step_rule("manual");
    REQUIRE(r.ok());
    CHECK(r->kind == StepRule::Kind::Manual);
  }
  SECTION("cudaProfilerApi") {
    auto r = parse_step_rule("cudaProfilerApi");
    REQUIRE(r.ok());
    CHECK(r->kind == StepRule::Kind::CudaProfilerApi);
  }
  SECTION("forward: the model's outermost forward, which no scope ends") {
    auto r = parse_step_rule(" forward ");
    REQUIRE(r.ok());
    CHECK(r->kind == StepRule::Kind::Forward);
    CHECK_FALSE(r->ends_step("forward"));
    CHECK_FALSE(r->watches_ops());
    CHECK(r->describe().find("model's forward") != std::string::npos);
  }
  SECTION("any other text names a RecordFunction range") {
    for (const char* text :
         {"model_train_step", "train step", "ProfilerStep", "aten::add", "Optimizer.step#SGD.step"}) {
      INFO("input: '" << text << "'");
      auto r = parse_step_rule(text);
      REQUIRE(r.ok());
      CHECK(r->kind == StepRule::Kind::Named);
      CHECK(r->name == text);
    }
    auto r = parse_step_rule("  spaced name  ");
    REQUIRE(r.ok());
    CHECK(r->kind == StepRule::Kind::Named);
    CHECK(r->name == "spaced name");
  }
}

TEST_CASE("StepRule::ends_step", "[schedule][step]") {
  StepRule optimizer = *parse_step_rule("optimizer");
  // Optimizer.step#<Class>.step is what torch names the step of each optimizer.
  for (const char* scope : {"Optimizer.step#SGD.step", "Optimizer.step#Adam.step", "Optimizer.step#AdamW.step",
                            "Optimizer.step#MyCustomOptimizer.step"}) {
    INFO(scope);
    CHECK(optimizer.ends_step(scope));
  }
  for (const char* scope :
       {"Optimizer.zero_grad#SGD.zero_grad", "Optimizer.step#", "Optimizer.step#SGD", "optimizer.step#SGD.step",
        "aten::add_", "", "ProfilerStep#3", "Optimizer.step#SGD.stepx"}) {
    INFO(scope);
    CHECK_FALSE(optimizer.ends_step(scope));
  }

  StepRule named = *parse_step_rule("model_train_step");
  CHECK(named.ends_step("model_train_step"));
  CHECK_FALSE(named.ends_step("model_train_step2"));
  CHECK_FALSE(named.ends_step("model_train"));
  CHECK_FALSE(named.ends_step("Optimizer.step#SGD.step"));

  StepRule manual = *parse_step_rule("manual");
  StepRule cuda = *parse_step_rule("cudaProfilerApi");
  for (const char* scope : {"Optimizer.step#SGD.step", "manual", "cudaProfilerApi", "model_train_step"}) {
    INFO(scope);
    CHECK_FALSE(manual.ends_step(scope));
    CHECK_FALSE(cuda.ends_step(scope));
  }
}

// PTPROF_SCHEDULE and PTPROF_STEP through the environment reader: the
// message names the variable, the value and what is accepted.
namespace {
std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
}  // namespace

TEST_CASE("config_from_env: PTPROF_SCHEDULE and PTPROF_STEP", "[schedule][config]") {
  SECTION("good values") {
    g_env = {{"PTPROF_SCHEDULE", "wait=1,warmup=1,active=3,repeat=2"}, {"PTPROF_STEP", "manual"}};
    auto c = ptprof::config_from_env(fake_getenv);
    REQUIRE(c.ok());
    CHECK(c->schedule.enabled);
    CHECK(c->schedule.to_string() == "skip_first=0,wait=1,warmup=1,active=3,repeat=2");
    CHECK(c->step.kind == StepRule::Kind::Manual);
  }
  SECTION("unset: one window, steps end at the optimizer") {
    g_env = {};
    auto c = ptprof::config_from_env(fake_getenv);
    REQUIRE(c.ok());
    CHECK_FALSE(c->schedule.enabled);
    CHECK(c->step.kind == StepRule::Kind::Optimizer);
  }
  SECTION("a bad schedule") {
    g_env = {{"PTPROF_SCHEDULE", "wait=1,active=x"}};
    auto c = ptprof::config_from_env(fake_getenv);
    REQUIRE_FALSE(c.ok());
    const std::string& error = c.error();
    INFO("message: " << error);
    CHECK(error.find('\n') == std::string::npos);  // one bad variable, one line
    CHECK_THAT(error, Catch::Contains("PTPROF_SCHEDULE"));
    CHECK_THAT(error, Catch::Contains("wait=1,active=x"));
    CHECK_THAT(error, Catch::Contains("'active'"));
    check_names_accepted(error);
  }
  SECTION("booleans: the spellings the README documents, and a message that lists them") {
    for (const char* yes : {"1", "true", "True", "yes", "on"}) {
      g_env = {{"PTPROF_RECORD_SHAPES", yes}};
      auto c = ptprof::config_from_env(fake_getenv);
      INFO("value " << yes);
      REQUIRE(c.ok());
      CHECK(c->record_shapes);
    }
    for (const char* no : {"0", "false", "False", "no", "off", ""}) {
      g_env = {{"PTPROF_RECORD_SHAPES", "1"}, {"PTPROF_NATIVE_STACK", no}};
      auto c = ptprof::config_from_env(fake_getenv);
      INFO("value '" << no << "'");
      REQUIRE(c.ok());
      CHECK_FALSE(c->native_stack);
    }
    g_env = {{"PTPROF_RECORD_SHAPES", "maybe"}};
    auto c = ptprof::config_from_env(fake_getenv);
    REQUIRE_FALSE(c.ok());
    CHECK_THAT(c.error(), Catch::Contains("accepted: 1, true, True, yes, on or 0, false, False, no, off, empty"));
  }
  SECTION("two bad variables: one line each") {
    g_env = {{"PTPROF_SCHEDULE", "bogus=1"}, {"PTPROF_RECORD_SHAPES", "maybe"}};
    auto c = ptprof::config_from_env(fake_getenv);
    REQUIRE_FALSE(c.ok());
    std::vector<std::string> lines;
    ptprof::for_each_line(c.error(), [&](std::string_view l) { lines.emplace_back(l); });
    REQUIRE(lines.size() == 2);
    CHECK_THAT(lines[0], Catch::Contains("PTPROF_SCHEDULE"));
    CHECK_THAT(lines[1], Catch::Contains("PTPROF_RECORD_SHAPES"));
  }
  g_env.clear();
}
