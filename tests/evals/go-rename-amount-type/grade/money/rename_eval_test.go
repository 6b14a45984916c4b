package money

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalAmountType(t *testing.T) {
	var a Amount = Cents(199)
	if a.String() != "1.99" || Sum(a, a) != Amount(398) {
		t.Fatal("Amount does not behave like the old type")
	}
}

// The identifier Amt must not appear in any Go file of the module (comments aside).
func TestEvalOldNameGone(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	err := filepath.Walk("..", func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_eval_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		seen++
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "Amt" {
				t.Errorf("%s: Amt is still used", fset.Position(id.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 7 {
		t.Fatalf("only %d Go files found", seen)
	}
}
