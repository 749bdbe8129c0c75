import { PageHeader } from '../components/States';

export default function Groups() {
  return <PageHeader title="Groups" />;
}
