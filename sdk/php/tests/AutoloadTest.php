<?php
// The autoloader without Composer (src/autoload.php) names the SDK's classes instead of
// looking for their files: its list must be src/'s files, no more, no fewer, and a name it
// does not list loads nothing. src/ holds classes only (an interface or enum added there
// fails the class_exists check below, on purpose: the test then needs its kind).
declare(strict_types=1);

namespace RootTrace\Tests;

use PHPUnit\Framework\TestCase;

final class AutoloadTest extends TestCase
{
    public function testTheListIsTheFilesOfSrc(): void
    {
        $src = realpath(__DIR__ . '/../src');
        $files = [];
        foreach (glob($src . '/*.php') as $f) {
            if (basename($f) !== 'autoload.php') {
                $files[] = basename($f, '.php');
            }
        }
        $code = (string)file_get_contents($src . '/autoload.php');
        $this->assertSame(1, preg_match('/match \(\$name\) \{(.*?)=> true/s', $code, $m));
        preg_match_all("/'([A-Za-z]+)'/", $m[1], $listed);
        $list = $listed[1];
        sort($files);
        sort($list);
        $this->assertGreaterThan(10, count($files));
        $this->assertSame($files, $list, 'src/autoload.php names every class of src/, no other');
    }

    public function testEveryListedClassLoadsAndNothingElseDoes(): void
    {
        $src = realpath(__DIR__ . '/../src');
        $names = array_map(static fn($f) => basename($f, '.php'),
            array_filter(glob($src . '/*.php'), static fn($f) => basename($f) !== 'autoload.php'));
        // In a fresh PHP: each class loads through the autoloader; called directly with names
        // class_exists() would refuse (a path, a sub-namespace) or with no file, it loads nothing.
        $code = '<?php require ' . var_export($src . '/autoload.php', true) . ';'
            . '$out = [];'
            . 'foreach (' . var_export(array_values($names), true) . ' as $n) {'
            . '  $out[$n] = class_exists("RootTrace\\\\" . $n);'
            . '}'
            . 'foreach (["Missing", "../src/Agent", "Sub\\\\Agent", "agent"] as $n) {'
            . '  $before = count(get_included_files());'
            . '  spl_autoload_call("RootTrace\\\\" . $n);'
            . '  $out[$n] = count(get_included_files()) !== $before;'
            . '}'
            . 'echo json_encode($out);';
        $file = tempnam(sys_get_temp_dir(), 'rt-autoload-');
        file_put_contents($file, $code);
        try {
            exec(escapeshellarg(PHP_BINARY) . ' ' . escapeshellarg($file) . ' 2>&1', $lines, $rc);
        } finally {
            unlink($file);
        }
        $this->assertSame(0, $rc, implode("\n", $lines));
        $want = array_fill_keys(array_values($names), true)
            + ['Missing' => false, '../src/Agent' => false, 'Sub\\Agent' => false, 'agent' => false];
        $this->assertSame($want, json_decode(implode("\n", $lines), true));
    }
}
