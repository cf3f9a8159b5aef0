/* Forced include for wdk-sys's bindgen run over mingw-w64 10's DDK headers (Linux cross build
 * only): declares what those headers lack. Nothing here is linked: the driver resolves
 * ExAllocatePool2 at run time (driver/src/wdm/pool.rs). */
#pragma once
#include <ntddk.h>
#ifndef POOL_FLAG_NON_PAGED
typedef ULONG64 POOL_FLAGS;
#define POOL_FLAG_NON_PAGED 0x0000000000000040ULL
NTKERNELAPI PVOID NTAPI ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag);
#endif
