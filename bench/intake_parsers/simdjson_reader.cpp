// simdjson_reader.cpp: simdjson's On-Demand API on a scene, in the two
// modes of parsers.h, behind its C interface. Errors are codes (no
// exceptions): every one is a nonzero return. On-Demand is inline code
// compiled for the CPU the compiler targets (the library's runtime dispatch
// does not reach it), so bench/CMakeLists.txt builds this file with
// -march=native (icelake kernels on the EPYC here); with the default x86-64
// target it runs simdjson's "fallback" kernels, which measured as fast on
// the piles (0.086-0.095 against 0.089-0.099 CPU s at 1e5 contacts): the
// numbers, not the structure, take the time.
#include "parsers.h"

#include <simdjson.h>

#include <cstring>
#include <string_view>

using namespace simdjson;

namespace {

// Every value below v, numbers converted to double and summed.
error_code walk(ondemand::value v, double &sum) {
  ondemand::json_type t;
  if (auto e = v.type().get(t))
    return e;
  switch (t) {
  case ondemand::json_type::object: {
    ondemand::object o;
    if (auto e = v.get_object().get(o))
      return e;
    for (auto field : o) {
      ondemand::value x;
      if (auto e = field.value().get(x))
        return e;
      if (auto e = walk(x, sum))
        return e;
    }
    return SUCCESS;
  }
  case ondemand::json_type::array: {
    ondemand::array a;
    if (auto e = v.get_array().get(a))
      return e;
    for (auto el : a) {
      ondemand::value x;
      if (auto e = el.get(x))
        return e;
      if (auto e = walk(x, sum))
        return e;
    }
    return SUCCESS;
  }
  case ondemand::json_type::number: {
    double d;
    if (auto e = v.get_double().get(d))
      return e;
    sum += d;
    return SUCCESS;
  }
  case ondemand::json_type::string: {
    std::string_view s;
    return v.get_string().get(s);
  }
  case ondemand::json_type::boolean: {
    bool b;
    return v.get_bool().get(b);
  }
  default:
    return v.is_null().error();
  }
}

// Up to n numbers of an array into x.
error_code numbers(ondemand::value v, double *x, int n, double &sum) {
  ondemand::array a;
  if (auto e = v.get_array().get(a))
    return e;
  int i = 0;
  for (auto el : a) {
    double d;
    if (auto e = el.get_double().get(d))
      return e;
    sum += d;
    if (i < n)
      x[i] = d;
    i++;
  }
  return SUCCESS;
}

error_code body(ondemand::object o, cm_body_t &b, int dim, double &sum) {
  cm_body_init(&b);
  for (auto field : o) {
    std::string_view k;
    ondemand::value v;
    if (auto e = field.unescaped_key().get(k))
      return e;
    if (auto e = field.value().get(v))
      return e;
    error_code e = SUCCESS;
    if (k == "fixed") {
      bool f;
      e = v.get_bool().get(f);
      b.fixed = f;
    } else if (k == "mass") {
      e = v.get_double().get(b.mass);
      sum += b.mass;
    } else if (k == "position")
      e = numbers(v, b.position, 3, sum);
    else if (k == "orientation")
      e = numbers(v, b.orientation, 4, sum);
    else if (k == "inertia" && dim == 2) {
      e = v.get_double().get(b.inertia[0]);
      sum += b.inertia[0];
    } else if (k == "inertia") {
      ondemand::array rows;
      e = v.get_array().get(rows);
      int r = 0;
      for (auto row : rows) {
        ondemand::value rv;
        if (!e)
          e = row.get(rv);
        if (!e)
          e = numbers(rv, b.inertia + 3 * (r < 3 ? r : 2), r < 3 ? 3 : 0, sum);
        r++;
      }
    } else
      e = walk(v, sum);
    if (e)
      return e;
  }
  return SUCCESS;
}

error_code contact(ondemand::object o, cm_contact_t &c, double &sum) {
  cm_contact_init(&c);
  for (auto field : o) {
    std::string_view k;
    ondemand::value v;
    if (auto e = field.unescaped_key().get(k))
      return e;
    if (auto e = field.value().get(v))
      return e;
    error_code e = SUCCESS;
    if (k == "a" || k == "b") {
      int64_t i = 0;
      bool null = false;
      if ((e = v.is_null().get(null)) == SUCCESS && null)
        (k == "a" ? c.a : c.b) = CM_WORLD; /* null: the world */
      else if ((e = v.get_int64().get(i)) == SUCCESS)
        (k == "a" ? c.a : c.b) = (int)i, sum += (double)i;
    } else if (k == "point")
      e = numbers(v, c.point, 3, sum);
    else if (k == "normal")
      e = numbers(v, c.normal, 3, sum);
    else if (k == "stiffness") {
      e = v.get_double().get(c.stiffness);
      sum += c.stiffness;
    } else
      e = walk(v, sum);
    if (e)
      return e;
  }
  return SUCCESS;
}

error_code scene(ondemand::document &doc, cm_scene_t **out, double &sum) {
  ondemand::object top;
  if (auto e = doc.get_object().get(top))
    return e;
  cm_context_t ctx;
  cm_context_init(&ctx);
  int dim = 3;
  for (auto field : top) {
    std::string_view k;
    ondemand::value v;
    if (auto e = field.unescaped_key().get(k))
      return e;
    if (auto e = field.value().get(v))
      return e;
    error_code e = SUCCESS;
    if (k == "dim") {
      int64_t d;
      e = v.get_int64().get(d);
      dim = (int)d;
    } else if (k == "bodies" || k == "contacts") {
      if (!*out && !(*out = cm_scene_create(dim)))
        return MEMALLOC;
      ondemand::array a;
      e = v.get_array().get(a);
      for (auto el : a) {
        ondemand::object o;
        if (!e)
          e = el.get_object().get(o);
        if (!e && k == "bodies") {
          cm_body_t b;
          e = body(o, b, dim, sum);
          if (!e && cm_scene_add_body(&ctx, *out, &b, NULL) < 0)
            e = MEMALLOC;
        } else if (!e) {
          cm_contact_t c;
          e = contact(o, c, sum);
          if (!e && cm_scene_add_contact(&ctx, *out, &c, NULL) < 0)
            e = MEMALLOC;
        }
      }
    } else
      e = walk(v, sum);
    if (e)
      return e;
  }
  /* a scene that fails the format's checks: any nonzero code will do */
  return *out && cm_scene_validate(&ctx, *out) == CM_OK ? SUCCESS
                                                        : INCORRECT_TYPE;
}

} // namespace

extern "C" int cm_bench_simdjson(const char *text, size_t len, int mode,
                                 double *sum, cm_scene_t **out) {
  ondemand::parser parser;
  ondemand::document doc;
  *sum = 0;
  if (parser.iterate(text, len, len + CM_BENCH_PADDING).get(doc))
    return 1;
  cm_scene_t *s = NULL;
  error_code e;
  if (mode == CM_BENCH_SCENE)
    e = scene(doc, &s, *sum);
  else {
    ondemand::value v;
    e = doc.get_value().get(v);
    if (!e)
      e = walk(v, *sum);
  }
  if (e || !out)
    cm_scene_destroy(&s);
  else
    *out = s;
  return e ? 1 : 0;
}
