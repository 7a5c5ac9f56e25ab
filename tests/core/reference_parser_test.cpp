// Tests for the reference-program parser: structure, precedence, positions, errors, fuzzing.
#include "core/reference_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace kevo::ref {
namespace {

const char* kExample =
    "import torch\n"
    "import torch.nn.functional as F\n"
    "\n"
    "def run(x, w, b):\n"
    "    # comment\n"
    "    y = F.linear(x, w, b) * 2.0\n"
    "    y = F.leaky_relu(y, negative_slope=0.1)\n"
    "    v, i = torch.max(y, dim=1, keepdim=True)\n"
    "    z = x.view(x.shape[0], -1).sum(dim=(1,)) ** 2 + -y\n"
    "    ln = F.layer_norm(x, x.shape[1:], eps=1e-5)\n"
    "    return y, i\n";

// Wraps one expression as the value returned by `run` and gives back that expression.
ExprPtr parse_expr(const std::string& expr) {
  Program p = parse_reference("def run(x):\n    return " + expr + "\n");
  EXPECT_EQ(p.body.size(), 1u);
  return p.body.back().value;
}

// Renders an expression as a compact s-expression so structure can be compared in one line.
std::string sexpr(const ExprPtr& e) {
  if (!e) return "_";
  auto items = [&] {
    std::string s;
    for (const ExprPtr& item : e->items) s += " " + sexpr(item);
    return s;
  };
  switch (e->kind) {
    case ExprKind::Name: return e->name;
    case ExprKind::Int: return std::to_string(e->int_value);
    case ExprKind::Float: return "float";
    case ExprKind::Bool: return e->bool_value ? "True" : "False";
    case ExprKind::None: return "None";
    case ExprKind::String: return "'" + e->name + "'";
    case ExprKind::Tuple: return "(tuple" + items() + ")";
    case ExprKind::List: return "(list" + items() + ")";
    case ExprKind::Attribute: return "(." + e->name + items() + ")";
    case ExprKind::Call: {
      std::string s = "(call " + sexpr(e->callee) + items();
      for (const Keyword& k : e->keywords) s += " " + k.name + "=" + sexpr(k.value);
      return s + ")";
    }
    case ExprKind::Binary: {
      const char* names[] = {"+", "-", "*", "/", "//", "%", "**", "@"};
      return std::string("(") + names[static_cast<int>(e->bin_op)] + items() + ")";
    }
    case ExprKind::Unary: return std::string(e->un_op == UnOp::Neg ? "(neg" : "(pos") + items() + ")";
    case ExprKind::Compare: {
      const char* names[] = {"==", "!=", "<", "<=", ">", ">="};
      return std::string("(") + names[static_cast<int>(e->cmp_op)] + items() + ")";
    }
    case ExprKind::Subscript: return "(sub" + items() + ")";
    case ExprKind::Slice: return "(slice" + items() + ")";
    case ExprKind::Ellipsis: return "...";
  }
  return "?";
}

::testing::AssertionResult at(Pos p, int line, int col) {
  if (p.line == line && p.col == col) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "position is " << p.line << ":" << p.col << ", expected "
                                       << line << ":" << col;
}

TEST(ReferenceParser, ParsesTheContractExample) {
  Program p = parse_reference(kExample);
  EXPECT_EQ(p.function_name, "run");
  EXPECT_TRUE(at(p.function_pos, 4, 5));
  EXPECT_EQ(p.params, (std::vector<std::string>{"x", "w", "b"}));
  ASSERT_EQ(p.param_pos.size(), 3u);
  EXPECT_TRUE(at(p.param_pos[2], 4, 15));
  ASSERT_EQ(p.body.size(), 6u);

  // y = F.linear(x, w, b) * 2.0
  const Stmt& s0 = p.body[0];
  EXPECT_EQ(s0.kind, StmtKind::Assign);
  EXPECT_TRUE(at(s0.pos, 6, 5));
  EXPECT_EQ(s0.targets, (std::vector<std::string>{"y"}));
  EXPECT_EQ(s0.value->kind, ExprKind::Binary);
  EXPECT_EQ(s0.value->bin_op, BinOp::Mul);
  EXPECT_TRUE(at(s0.value->pos, 6, 27));  // the '*'
  const ExprPtr& call = s0.value->items[0];
  EXPECT_EQ(call->kind, ExprKind::Call);
  EXPECT_TRUE(at(call->pos, 6, 9));  // the callee's first token, 'F'
  EXPECT_EQ(call->callee->kind, ExprKind::Attribute);
  EXPECT_EQ(call->callee->name, "linear");
  EXPECT_TRUE(at(call->callee->pos, 6, 11));  // the attribute name
  EXPECT_EQ(sexpr(s0.value), "(* (call (.linear F) x w b) float)");
  EXPECT_DOUBLE_EQ(s0.value->items[1]->float_value, 2.0);

  // y = F.leaky_relu(y, negative_slope=0.1)
  const ExprPtr& leaky = p.body[1].value;
  ASSERT_EQ(leaky->keywords.size(), 1u);
  EXPECT_EQ(leaky->keywords[0].name, "negative_slope");
  EXPECT_TRUE(at(leaky->keywords[0].pos, 7, 25));
  EXPECT_DOUBLE_EQ(leaky->keywords[0].value->float_value, 0.1);

  // v, i = torch.max(y, dim=1, keepdim=True)
  const Stmt& s2 = p.body[2];
  EXPECT_EQ(s2.targets, (std::vector<std::string>{"v", "i"}));
  ASSERT_EQ(s2.target_pos.size(), 2u);
  EXPECT_TRUE(at(s2.target_pos[0], 8, 5));
  EXPECT_TRUE(at(s2.target_pos[1], 8, 8));
  EXPECT_EQ(sexpr(s2.value), "(call (.max torch) y dim=1 keepdim=True)");

  // z = x.view(x.shape[0], -1).sum(dim=(1,)) ** 2 + -y
  const ExprPtr& z = p.body[3].value;
  EXPECT_EQ(sexpr(z),
            "(+ (** (call (.sum (call (.view x) (sub (.shape x) 0) (neg 1))) dim=(tuple 1)) 2) "
            "(neg y))");
  EXPECT_TRUE(at(z->pos, 9, 51));
  EXPECT_TRUE(at(z->items[0]->pos, 9, 46));
  EXPECT_TRUE(at(z->items[1]->pos, 9, 53));

  // ln = F.layer_norm(x, x.shape[1:], eps=1e-5)
  const ExprPtr& ln = p.body[4].value;
  EXPECT_EQ(sexpr(ln), "(call (.layer_norm F) x (sub (.shape x) (slice 1 _ _)) eps=float)");
  EXPECT_TRUE(at(ln->items[1]->pos, 10, 26));  // the subscript starts at 'x'
  EXPECT_DOUBLE_EQ(ln->keywords[0].value->float_value, 1e-5);

  // return y, i
  const Stmt& ret = p.body[5];
  EXPECT_EQ(ret.kind, StmtKind::Return);
  EXPECT_TRUE(at(ret.pos, 11, 5));
  EXPECT_EQ(sexpr(ret.value), "(tuple y i)");
  EXPECT_TRUE(at(ret.value->pos, 11, 12));

  EXPECT_EQ(p.modules.at("torch"), "torch");
  EXPECT_EQ(p.modules.at("F"), "torch.nn.functional");
  EXPECT_EQ(p.modules.at("math"), "math");
}

TEST(ReferenceParser, FollowsPythonPrecedence) {
  EXPECT_EQ(sexpr(parse_expr("a + b * c ** -d @ e")), "(+ a (@ (* b (** c (neg d))) e))");
  EXPECT_EQ(sexpr(parse_expr("a - b - c")), "(- (- a b) c)");
  EXPECT_EQ(sexpr(parse_expr("a / b // c % d")), "(% (// (/ a b) c) d)");
  EXPECT_EQ(sexpr(parse_expr("a + b == c * d")), "(== (+ a b) (* c d))");
  EXPECT_EQ(sexpr(parse_expr("(a + b) * c")), "(* (+ a b) c)");
  EXPECT_EQ(sexpr(parse_expr("x.sum(1)[0] ** 2")), "(** (sub (call (.sum x) 1) 0) 2)");
  EXPECT_EQ(sexpr(parse_expr("a >= b")), "(>= a b)");
  EXPECT_EQ(sexpr(parse_expr("a != -b")), "(!= a (neg b))");
}

TEST(ReferenceParser, PowerBindsTighterThanUnaryMinusOnItsLeft) {
  EXPECT_EQ(sexpr(parse_expr("-x**2")), "(neg (** x 2))");
  EXPECT_EQ(sexpr(parse_expr("2**-1")), "(** 2 (neg 1))");
  EXPECT_EQ(sexpr(parse_expr("2**3**2")), "(** 2 (** 3 2))");
  EXPECT_EQ(sexpr(parse_expr("-+-x")), "(neg (pos (neg x)))");
  EXPECT_EQ(sexpr(parse_expr("(-x)**2")), "(** (neg x) 2)");
  ExprPtr e = parse_expr("-x**2");
  EXPECT_TRUE(at(e->pos, 2, 12));
  EXPECT_TRUE(at(e->items[0]->pos, 2, 14));
}

TEST(ReferenceParser, ParsesSlicesAndIndexTuples) {
  EXPECT_EQ(sexpr(parse_expr("x[1:]")), "(sub x (slice 1 _ _))");
  EXPECT_EQ(sexpr(parse_expr("x[:-1]")), "(sub x (slice _ (neg 1) _))");
  EXPECT_EQ(sexpr(parse_expr("x[::2]")), "(sub x (slice _ _ 2))");
  EXPECT_EQ(sexpr(parse_expr("x[a:b:c]")), "(sub x (slice a b c))");
  EXPECT_EQ(sexpr(parse_expr("x[:]")), "(sub x (slice _ _ _))");
  EXPECT_EQ(sexpr(parse_expr("x[i, j]")), "(sub x (tuple i j))");
  EXPECT_EQ(sexpr(parse_expr("x[:, 0]")), "(sub x (tuple (slice _ _ _) 0))");
  EXPECT_EQ(sexpr(parse_expr("x[0,]")), "(sub x (tuple 0))");
  EXPECT_EQ(sexpr(parse_expr("x[..., None, 1:]")), "(sub x (tuple ... None (slice 1 _ _)))");
  EXPECT_EQ(sexpr(parse_expr("x[...]")), "(sub x ...)");
  ExprPtr e = parse_expr("x[i, j]");
  EXPECT_TRUE(at(e->pos, 2, 12));
  EXPECT_TRUE(at(e->items[1]->pos, 2, 14));
}

TEST(ReferenceParser, ParsesTuplesListsAndLiterals) {
  EXPECT_EQ(sexpr(parse_expr("()")), "(tuple)");
  EXPECT_EQ(sexpr(parse_expr("(a,)")), "(tuple a)");
  EXPECT_EQ(sexpr(parse_expr("(a, b,)")), "(tuple a b)");
  EXPECT_EQ(sexpr(parse_expr("[1, 2,]")), "(list 1 2)");
  EXPECT_EQ(sexpr(parse_expr("[]")), "(list)");
  EXPECT_EQ(sexpr(parse_expr("f(a, b,)")), "(call f a b)");
  EXPECT_EQ(sexpr(parse_expr("f()")), "(call f)");
  EXPECT_EQ(sexpr(parse_expr("True, False, None")), "(tuple True False None)");
  EXPECT_EQ(sexpr(parse_expr("inf")), "inf");  // a name, not a literal
  EXPECT_EQ(parse_expr("0x1F")->int_value, 31);
  EXPECT_EQ(parse_expr("1_000")->int_value, 1000);
  EXPECT_EQ(parse_expr("9223372036854775807")->int_value, INT64_MAX);
  EXPECT_EQ(parse_expr("0")->int_value, 0);
  EXPECT_DOUBLE_EQ(parse_expr("1e-5")->float_value, 1e-5);
  EXPECT_DOUBLE_EQ(parse_expr(".5")->float_value, 0.5);
  EXPECT_DOUBLE_EQ(parse_expr("5.")->float_value, 5.0);
  EXPECT_DOUBLE_EQ(parse_expr("1_0.5")->float_value, 10.5);
  EXPECT_DOUBLE_EQ(parse_expr("2.5E+2")->float_value, 250.0);
  EXPECT_EQ(parse_expr("1.0")->kind, ExprKind::Float);
  EXPECT_EQ(parse_expr("'a\\tb\\'c'")->name, "a\tb'c");
  EXPECT_EQ(parse_expr("\"x\\n\\x41\\u00e9\\\\\"")->name, "x\nA\xc3\xa9\\");
  EXPECT_EQ(parse_expr("'ab' \"cd\"")->name, "abcd");
  EXPECT_EQ(parse_expr("r'\\d'")->name, "\\d");
}

TEST(ReferenceParser, ParsesTupleUnpackingAndReturns) {
  Program p = parse_reference(
      "def run(x):\n"
      "    a, b = x\n"
      "    (c, d) = x\n"
      "    e = a, b\n"
      "    pass\n"
      "    return (a, b)\n");
  ASSERT_EQ(p.body.size(), 5u);
  EXPECT_EQ(p.body[0].targets, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.body[1].targets, (std::vector<std::string>{"c", "d"}));
  EXPECT_TRUE(at(p.body[1].pos, 3, 5));
  EXPECT_TRUE(at(p.body[1].target_pos[1], 3, 9));
  EXPECT_EQ(sexpr(p.body[2].value), "(tuple a b)");
  EXPECT_EQ(p.body[3].kind, StmtKind::Pass);
  EXPECT_EQ(sexpr(p.body[4].value), "(tuple a b)");

  Program bare = parse_reference("def run(x):\n    return\n");
  EXPECT_EQ(bare.body[0].kind, StmtKind::Return);
  EXPECT_EQ(bare.body[0].value, nullptr);

  EXPECT_EQ(sexpr(parse_expr("a, b, c")), "(tuple a b c)");
  EXPECT_EQ(sexpr(parse_expr("a,")), "(tuple a)");
}

TEST(ReferenceParser, RecordsImportsAndDefaults) {
  Program none = parse_reference("def run(x):\n    return x\n");
  EXPECT_EQ(none.modules, (std::map<std::string, std::string>{
                              {"torch", "torch"}, {"F", "torch.nn.functional"}, {"math", "math"}}));

  Program p = parse_reference(
      "import torch.nn as nn\n"
      "from torch.nn import functional as G\n"
      "from torch import nn as tnn\n"
      "import math, torch.nn.functional\n"
      "def run(x):\n    return x\n");
  EXPECT_EQ(p.modules, (std::map<std::string, std::string>{{"torch", "torch"},
                                                           {"F", "torch.nn.functional"},
                                                           {"G", "torch.nn.functional"},
                                                           {"nn", "torch.nn"},
                                                           {"tnn", "torch.nn"},
                                                           {"math", "math"}}));

  // An explicit import wins over the default binding of the same name.
  Program rebound = parse_reference("from torch import nn as F\ndef run(x):\n    return x\n");
  EXPECT_EQ(rebound.modules.at("F"), "torch.nn");

  Program plain = parse_reference("from torch.nn import functional\ndef run(x):\n    return x\n");
  EXPECT_EQ(plain.modules.at("functional"), "torch.nn.functional");
}

TEST(ReferenceParser, SkipsDocstringsCommentsAndBlankLines) {
  Program p = parse_reference(
      "\n"
      "# leading comment\n"
      "\"\"\"Module docstring.\"\"\"\n"
      "import torch  # trailing comment\n"
      "\n"
      "def run(x):  # comment after the colon\n"
      "    \"\"\"Docstring\n"
      "\n"
      "    spanning lines.\"\"\"\n"
      "    # a comment\n"
      "\n"
      "        # a comment indented differently\n"
      "    y = x  # trailing\n"
      "    return y\n"
      "# trailing comment\n"
      "\n");
  ASSERT_EQ(p.body.size(), 2u);
  EXPECT_TRUE(at(p.function_pos, 6, 5));
  EXPECT_TRUE(at(p.body[0].pos, 13, 5));

  Program single = parse_reference("def run(x):\n    'doc'\n    return x\n");
  EXPECT_EQ(single.body.size(), 1u);
}

TEST(ReferenceParser, AcceptsCrlfTabsAndContinuations) {
  Program crlf = parse_reference("import torch\r\ndef run(x):\r\n    y = x + 1\r\n    return y\r\n");
  ASSERT_EQ(crlf.body.size(), 2u);
  EXPECT_TRUE(at(crlf.body[1].value->pos, 4, 12));
  EXPECT_TRUE(at(crlf.body[0].value->pos, 3, 11));

  Program tabs = parse_reference("def run(x):\n\ty = x\n\treturn y\n");
  EXPECT_TRUE(at(tabs.body[1].pos, 3, 2));

  Program backslash = parse_reference("def run(x):\n    y = x + \\\n        2\n    return y\n");
  EXPECT_EQ(sexpr(backslash.body[0].value), "(+ x 2)");
  EXPECT_TRUE(at(backslash.body[0].value->items[1]->pos, 3, 9));

  Program implicit = parse_reference(
      "def run(x,\n"
      "        w):\n"
      "    y = f(x,  # comment inside brackets\n"
      "  w,\n"
      "          dim=[1,\n"
      "2])\n"
      "    return y\n");
  EXPECT_EQ(sexpr(implicit.body[0].value), "(call f x w dim=(list 1 2))");
  EXPECT_TRUE(at(implicit.body[0].value->keywords[0].pos, 5, 11));

  Program one_line = parse_reference("def run(x): return x\n");
  EXPECT_EQ(one_line.body.size(), 1u);

  Program no_newline = parse_reference("def run(x):\n    return x");
  EXPECT_EQ(no_newline.body.size(), 1u);
}

// -- malformed input: exact position and the gist of the message --

struct BadCase {
  const char* name;
  std::string text;
  int line;
  int col;
  const char* message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class RejectsMalformed : public ::testing::TestWithParam<BadCase> {};

TEST_P(RejectsMalformed, WithPositionAndMessage) {
  const BadCase& c = GetParam();
  try {
    parse_reference(c.text);
    FAIL() << "parsed without error";
  } catch (const ReferenceError& e) {
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_EQ(e.col(), c.col) << e.what();
    EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    EXPECT_EQ(e.message().find('\n'), std::string::npos);
  }
}

const std::string kDef = "def run(x):\n";

INSTANTIATE_TEST_SUITE_P(
    ReferenceParser, RejectsMalformed,
    ::testing::Values(
        BadCase{"missing_colon", "def run(x)\n    return x\n", 1, 11, "expected ':'"},
        BadCase{"over_indented", kDef + "    y = x\n      return y\n", 3, 7, "unexpected indent"},
        BadCase{"bad_dedent", kDef + "    y = x\n  return y\n", 3, 3,
                "unindent does not match any outer indentation level"},
        BadCase{"tabs_after_spaces", kDef + "    y = x\n\treturn y\n", 3, 1,
                "inconsistent use of tabs and spaces"},
        BadCase{"mixed_in_one_line", kDef + "\t y = x\n    return y\n", 2, 2,
                "inconsistent use of tabs and spaces"},
        BadCase{"no_indented_body", kDef + "return x\n", 2, 1, "expected an indented block"},
        BadCase{"chained_comparison", kDef + "    return a < b < c\n", 2, 18,
                "chained comparisons are not supported"},
        BadCase{"if_statement", kDef + "    if x:\n        return x\n", 2, 5,
                "'if' statements are not supported"},
        BadCase{"for_statement", kDef + "    for i in x:\n        pass\n", 2, 5,
                "'for' statements are not supported"},
        BadCase{"while_statement", kDef + "    while x:\n        pass\n", 2, 5,
                "'while' statements are not supported"},
        BadCase{"with_statement", kDef + "    with x:\n        pass\n", 2, 5,
                "'with' statements are not supported"},
        BadCase{"lambda", kDef + "    return lambda y: y\n", 2, 12, "'lambda' is not supported"},
        BadCase{"conditional_expression", kDef + "    return x if x else 0\n", 2, 14,
                "'if' is not supported"},
        BadCase{"and_operator", kDef + "    return x and x\n", 2, 14, "'and' is not supported"},
        BadCase{"not_operator", kDef + "    return not x\n", 2, 12, "'not' is not supported"},
        BadCase{"yield", kDef + "    yield x\n", 2, 5, "'yield' is not supported"},
        BadCase{"unterminated_string", kDef + "    return \"abc\n", 2, 12,
                "unterminated string literal"},
        BadCase{"unterminated_docstring", kDef + "    \"\"\"doc\n    return x\n", 2, 5,
                "unterminated triple-quoted string literal"},
        BadCase{"unclosed_paren", kDef + "    return f(x, (1 + 2\n", 2, 17,
                "'(' was never closed"},
        BadCase{"missing_comma", kDef + "    return f(a b)\n", 2, 16,
                "expected ')' to close '(' opened at 2:13"},
        BadCase{"mismatched_bracket", kDef + "    return f(x]\n", 2, 15,
                "closing ']' does not match '(' opened at 2:13"},
        BadCase{"unmatched_close", kDef + "    return x)\n", 2, 13, "unmatched ')'"},
        BadCase{"bad_import", "import numpy as np\n" + kDef + "    return x\n", 1, 8,
                "import of 'numpy' is not allowed"},
        BadCase{"bad_submodule_import", "import torch.cuda\n" + kDef + "    return x\n", 1, 8,
                "import of 'torch.cuda' is not allowed"},
        BadCase{"bad_from_import", "from torch import relu\n" + kDef + "    return x\n", 1, 19,
                "import of 'torch.relu' is not allowed"},
        BadCase{"wildcard_import", "from torch import *\n" + kDef + "    return x\n", 1, 19,
                "wildcard imports are not supported"},
        BadCase{"positional_after_keyword", kDef + "    return f(dim=1, x)\n", 2, 21,
                "positional argument follows keyword argument"},
        BadCase{"duplicate_keyword", kDef + "    return f(x, dim=1, dim=2)\n", 2, 24,
                "duplicate keyword argument 'dim'"},
        BadCase{"star_args", kDef + "    return f(*x)\n", 2, 14, "'*args' arguments"},
        BadCase{"star_kwargs", kDef + "    return f(**x)\n", 2, 14, "'**kwargs' arguments"},
        BadCase{"integer_overflow", kDef + "    return 9223372036854775808\n", 2, 12,
                "integer literal out of range"},
        BadCase{"hex_overflow", kDef + "    return 0x10000000000000000\n", 2, 12,
                "integer literal out of range"},
        BadCase{"empty_input", "", 1, 1, "no function definition"},
        BadCase{"only_imports", "import torch\n", 2, 1, "no function definition"},
        BadCase{"nul_byte", kDef + "    return x" + std::string(1, '\0') + "\n", 2, 13,
                "unexpected character '\\x00'"},
        BadCase{"nul_in_comment", kDef + "    # a" + std::string(1, '\0') + "\n    return x\n",
                2, 8, "unexpected character '\\x00'"},
        BadCase{"non_ascii", kDef + "    return x \xc3\xa9\n", 2, 14,
                "unexpected character '\\xc3'"},
        BadCase{"no_return", kDef + "    y = x\n", 1, 1, "run() never returns a value"},
        BadCase{"unreachable", kDef + "    return x\n    y = x\n", 3, 5,
                "unreachable statement after return"},
        BadCase{"augmented_assignment", kDef + "    x += 1\n    return x\n", 2, 7,
                "augmented assignment '+=' is not supported"},
        BadCase{"parameter_default", "def run(x=1):\n    return x\n", 1, 10,
                "parameter defaults are not supported"},
        BadCase{"star_parameter", "def run(*a):\n    return a\n", 1, 9,
                "'*args' parameters are not supported"},
        BadCase{"annotation", "def run(x: int):\n    return x\n", 1, 10,
                "parameter annotations are not supported"},
        BadCase{"return_annotation", "def run(x) -> int:\n    return x\n", 1, 12,
                "return annotations are not supported"},
        BadCase{"duplicate_parameter", "def run(x, x):\n    return x\n", 1, 12,
                "duplicate parameter 'x'"},
        BadCase{"decorator", "@jit\n" + kDef + "    return x\n", 1, 1,
                "decorators are not supported"},
        BadCase{"nested_def", kDef + "    def g(y):\n        return y\n", 2, 5,
                "nested function definitions are not supported"},
        BadCase{"code_after_function", kDef + "    return x\nprint(1)\n", 3, 1,
                "code after the function definition is not supported"},
        BadCase{"second_function", kDef + "    return x\ndef g(y):\n    return y\n", 3, 1,
                "only one function definition is allowed"},
        BadCase{"global_code", "x = 1\n" + kDef + "    return x\n", 1, 1,
                "only imports may come before the function definition"},
        BadCase{"semicolon", kDef + "    y = x; return y\n", 2, 10, "semicolons are not supported"},
        BadCase{"f_string", kDef + "    return f\"{x}\"\n", 2, 12, "f-strings are not supported"},
        BadCase{"triple_quoted_value", kDef + "    return '''x'''\n", 2, 12,
                "triple-quoted strings are only allowed as docstrings"},
        BadCase{"attribute_target", kDef + "    x.y = 1\n    return x\n", 2, 5,
                "cannot assign to an attribute"},
        BadCase{"subscript_target", kDef + "    x[0] = 1\n    return x\n", 2, 5,
                "cannot assign to a subscript"},
        BadCase{"chained_assignment", kDef + "    a = b = x\n    return a\n", 2, 11,
                "chained assignment is not supported"},
        BadCase{"expression_statement", kDef + "    print(x)\n    return x\n", 2, 5,
                "expression statements are not supported"},
        BadCase{"bitwise_or", kDef + "    return x | x\n", 2, 14, "operator '|' is not supported"},
        BadCase{"dict_literal", kDef + "    return {}\n", 2, 12, "dict and set literals"},
        BadCase{"leading_zero", kDef + "    return 007\n", 2, 12, "leading zeros"},
        BadCase{"bad_number", kDef + "    return 1__0\n", 2, 12, "invalid number literal"},
        BadCase{"bad_exponent", kDef + "    return 1e\n", 2, 12, "invalid number literal"},
        BadCase{"complex_literal", kDef + "    return 1j\n", 2, 12, "complex literals"},
        BadCase{"empty_subscript", kDef + "    return x[]\n", 2, 14, "expected an index"},
        BadCase{"missing_operand", kDef + "    return x +\n", 2, 15, "unexpected end of line"},
        BadCase{"stray_backslash", kDef + "    return x \\ y\n", 2, 14,
                "unexpected character after line continuation"},
        BadCase{"backslash_at_end", kDef + "    return x + \\\n", 2, 16,
                "unexpected end of input after line continuation"},
        BadCase{"truncated_escape", kDef + "    return '\\x4'\n", 2, 13, "truncated \\x escape"},
        BadCase{"leading_indent", "  " + kDef + "    return x\n", 1, 3, "unexpected indent"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

// -- robustness --

void expect_reference_error(const std::string& text, const char* message) {
  try {
    parse_reference(text);
    ADD_FAILURE() << "parsed without error";
  } catch (const ReferenceError& e) {
    EXPECT_NE(e.message().find(message), std::string::npos) << e.what();
  }
}

TEST(ReferenceParser, CapsNestingDepthWithoutCrashing) {
  const int n = 100000;
  try {
    parse_reference(kDef + "    return " + std::string(n, '(') + "x" + std::string(n, ')') + "\n");
    FAIL() << "parsed without error";
  } catch (const ReferenceError& e) {
    EXPECT_EQ(e.message(), "expression nested too deeply");
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.col(), 12 + 200);  // the 201st '('
  }
  expect_reference_error(kDef + "    return " + std::string(n, '('), "nested too deeply");
  expect_reference_error(kDef + "    return " + std::string(n, '[') + "x", "nested too deeply");
  expect_reference_error(kDef + "    return " + std::string(n, '-') + "x\n", "nested too deeply");

  std::string calls, attrs = "x", sums = "x", powers = "x", subs = "x";
  for (int i = 0; i < n; ++i) {
    calls += "f(";
    attrs += ".a";
    sums += "+x";
    powers += "**x";
    subs += "[0]";
  }
  expect_reference_error(kDef + "    return " + calls + "\n", "nested too deeply");
  expect_reference_error(kDef + "    return " + attrs + "\n", "nested too deeply");
  expect_reference_error(kDef + "    return " + sums + "\n", "nested too deeply");
  expect_reference_error(kDef + "    return " + powers + "\n", "nested too deeply");
  expect_reference_error(kDef + "    return " + subs + "\n", "nested too deeply");

  // Width is not depth: a long flat tuple is fine.
  std::string wide = "(";
  for (int i = 0; i < n; ++i) wide += "1,";
  Program p = parse_reference(kDef + "    return " + wide + ")\n");
  EXPECT_EQ(p.body[0].value->items.size(), static_cast<size_t>(n));

  // Moderate nesting is accepted.
  EXPECT_EQ(sexpr(parse_expr(std::string(50, '(') + "x" + std::string(50, ')'))), "x");
}

// Feeds mutated programs to the parser: each must parse or throw ReferenceError, nothing else.
TEST(ReferenceParser, SurvivesRandomMutations) {
  const std::vector<std::string> seeds = {
      kExample,
      "def run(x):\n    return torch.softmax(x, dim=1)",
      "\"\"\"doc\"\"\"\nfrom torch import nn\r\ndef run(a, b):\r\n\t'''d'''\r\n"
      "\tc = a[:, 1::2] @ b.T ** -2 // 3 % 4\r\n\treturn (c, a) , [b, 'x\\n\\u00e9']\r\n",
      "def run(x):\n    y = f(x, (1,), k=[0x1F, 1_0.5e-3], s='a\\'b') \\\n        + 2\n"
      "    a, b = y\n    return a == b\n",
  };
  const std::vector<std::string> pieces = {
      "(", ")", "[", "]", "{", "}", "\n", "\r\n", "\r", "    ", "\t", "\"", "'", "'''", "\"\"\"",
      "\\", "#", "**", "-", "=", ",", ":", ".", "lambda", "if", "return", "def run(x):",
      "import math\n", "0x", "1e", "9999999999999999999", std::string(1, '\0'), "\xff", "@",
      "((((((((((", "----------"};
  std::mt19937 rng(20240611);
  auto below = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };

  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text = seeds[below(seeds.size())];
    int mutations = 1 + static_cast<int>(below(4));
    for (int m = 0; m < mutations; ++m) {
      size_t where = below(text.size() + 1);
      switch (below(6)) {
        case 0:  // byte flip
          if (!text.empty()) text[below(text.size())] = static_cast<char>(rng() & 0xff);
          break;
        case 1:  // random byte insertion
          text.insert(where, 1, static_cast<char>(rng() & 0xff));
          break;
        case 2:  // deletion of a short range
          text.erase(where, below(8));
          break;
        case 3:  // truncation
          text.resize(where);
          break;
        case 4:  // insertion of a syntactically meaningful piece
          text.insert(where, pieces[below(pieces.size())]);
          break;
        case 5: {  // duplication of a chunk (repeats brackets, lines, operators)
          std::string chunk = text.substr(where, below(16));
          for (size_t k = below(20); k > 0; --k) text.insert(where, chunk);
          break;
        }
      }
    }
    try {
      parse_reference(text);
      ++parsed;
    } catch (const ReferenceError&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << " threw " << e.what();
    } catch (...) {
      ADD_FAILURE() << "iteration " << iter << " threw a non-standard exception";
    }
  }
  EXPECT_EQ(parsed + rejected, 20000);
  EXPECT_GT(parsed, 0);  // the mutations are not all fatal, so the accepting paths are exercised
  EXPECT_GT(rejected, 0);
}

TEST(ReferenceParser, SurvivesRandomBytes) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() & 0xff);
    try {
      parse_reference(text);
    } catch (const ReferenceError&) {
    } catch (...) {
      ADD_FAILURE() << "iteration " << iter << " threw something other than ReferenceError";
    }
  }
}

}  // namespace
}  // namespace kevo::ref
