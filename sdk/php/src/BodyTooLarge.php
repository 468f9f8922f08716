<?php
// An answer whose body is larger than the caller's cap (it was not read in full).
declare(strict_types=1);

namespace RootTrace;

final class BodyTooLarge extends HttpError
{
}
