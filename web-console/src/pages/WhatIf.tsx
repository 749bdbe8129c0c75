import { PageHeader } from '../components/States';

export default function WhatIf() {
  return <PageHeader title="WhatIf" />;
}
